// The report page's only script: pages of the ranked table, and a setup's page shown from the address's #.
(function () {
  "use strict";
  var table = document.getElementById("ranked");
  if (table) {
    var rows = Array.prototype.slice.call(table.querySelectorAll("tbody tr"));
    var per = parseInt(table.getAttribute("data-per-page"), 10) || 7;
    var pages = Math.max(1, Math.ceil(rows.length / per));
    var page = 0;
    var label = document.getElementById("page-label");
    var prev = document.getElementById("page-prev");
    var next = document.getElementById("page-next");
    var show = function (p) {
      page = Math.min(Math.max(p, 0), pages - 1);
      rows.forEach(function (row, i) { row.hidden = Math.floor(i / per) !== page; });
      label.textContent = "page " + (page + 1) + " of " + pages;
      prev.disabled = page === 0;
      next.disabled = page === pages - 1;
    };
    prev.addEventListener("click", function () { show(page - 1); });
    next.addEventListener("click", function () { show(page + 1); });
    show(0);
  }
  var route = function () {
    var id = decodeURIComponent(location.hash.slice(1));
    var shown = document.querySelector(".setup-page.shown");
    if (shown) { shown.classList.remove("shown"); }
    var target = id.indexOf("setup-") === 0 ? document.getElementById(id) : null;
    if (target && target.classList.contains("setup-page")) {
      target.classList.add("shown");
      document.body.classList.add("on-setup");
      window.scrollTo(0, 0);
    } else {
      document.body.classList.remove("on-setup");
    }
  };
  window.addEventListener("hashchange", route);
  route();
  // a setup's page: one measure over runs at a time, chosen from its menu
  Array.prototype.forEach.call(document.querySelectorAll("select.history-measure"), function (menu) {
    var card = menu.closest(".card");
    menu.addEventListener("change", function () {
      Array.prototype.forEach.call(card.querySelectorAll(".over-runs"), function (chart) {
        chart.hidden = chart.getAttribute("data-measure") !== menu.value;
      });
    });
  });
})();
