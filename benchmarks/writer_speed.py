"""How fast the offline question writer's model writes: SmolLM2-135M-Instruct run by PyTorch (transformers).

Loads the model as the local writer does (converting its GGUF file once into the model cache when it is not
there yet), then writes greedy answers to the same chat prompts with 1 and with 2 threads, and prints the
load time, tokens per second at each thread count, and the 2-thread speed as a ratio of the 1-thread speed
measured in the same run.

    python benchmarks/writer_speed.py [--prompts 6] [--tokens 48]
"""

from __future__ import annotations

import argparse
import time

PASSAGES = [
    "Customers in disaster areas can defer loan payments with no late fees for up to three months.",
    "Freeze a lost or stolen card instantly in the app; a replacement arrives in five days.",
    "Send money abroad by wire in forty currencies for a fee of 35 dollars.",
    "Deposit a check by photographing both sides in the app; funds arrive the next business day.",
    "A parent sees every transaction on a teen's card and can set spending limits.",
    "Points transfer to airline partners at one point per mile, in blocks of 1,000 points.",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=6)
    parser.add_argument("--tokens", type=int, default=48)
    args = parser.parse_args()

    from transformers import AutoTokenizer

    from vx_eval.llm.local import LocalChat, smollm2_folder

    started = time.perf_counter()
    folder = smollm2_folder()
    converted = time.perf_counter() - started
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    prompts = [
        [{"role": "user", "content": f"Write one question this passage answers.\n\n{PASSAGES[i % len(PASSAGES)]}"}]
        for i in range(args.prompts)
    ]
    speeds = {}
    for threads in (1, 2):
        started = time.perf_counter()
        chat = LocalChat(threads=threads)
        loaded = time.perf_counter() - started
        chat.complete(prompts[0], 4)  # warm-up
        tokens, started = 0, time.perf_counter()
        for messages in prompts:
            answer = chat.complete(messages, args.tokens)
            tokens += len(tokenizer(answer, add_special_tokens=False)["input_ids"])
        seconds = time.perf_counter() - started
        speeds[threads] = tokens / seconds
        rate = f"{tokens} tokens in {seconds:.1f} s = {speeds[threads]:.1f} tokens/s"
        print(f"{threads} thread(s): load {loaded:.1f} s; {rate}")
    print(f"model folder ready in {converted:.1f} s (0 when already converted)")
    print(f"2 threads / 1 thread: {speeds[2] / speeds[1]:.2f}x")


if __name__ == "__main__":
    main()
