"""The Python front end: `evaluate` and what a notebook needs beside it (`evaluation`: `open_engine`,
`embed_corpus`, `load_model`, `load_report`, `rescore`, `export_trec`), golden questions written from Python
(`questions`), a report's conveniences for people (`notebook`: its table, DataFrames and page), and what the
command line does as functions returning data (`commands`), shared with the command line and zero
configuration. `vx_eval` itself re-exports the public names on first use."""
