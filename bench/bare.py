"""The floor: a bare asyncio loop making the same requests with the openai async client, nothing else.

    python bench/bare.py --base-url URL -n 200 -c 32 [--two-step]
"""

from __future__ import annotations

import argparse
import asyncio
import json

from openai import AsyncOpenAI

TOOLS = [{"type": "function", "function": {"name": "lookup", "description": "Look a key up.", "parameters": {
    "type": "object", "properties": {"key": {"type": "string", "description": "The key"}}, "required": ["key"]}}}]


async def one(client: AsyncOpenAI, i: int, two_step: bool) -> None:
    messages: list[dict] = [{"role": "system", "content": "You answer questions."},
                            {"role": "user", "content": f"question {i}{' [tool]' if two_step else ''}"}]
    while True:
        response = await client.chat.completions.create(model="bench", messages=messages, tools=TOOLS,
                                                        tool_choice="auto")
        message = response.choices[0].message
        if not message.tool_calls:
            return
        messages.append({"role": "assistant", "content": "", "tool_calls": [
            {"id": c.id, "type": "function", "function": {"name": c.function.name, "arguments": c.function.arguments}}
            for c in message.tool_calls]})
        for c in message.tool_calls:
            messages.append({"role": "tool", "tool_call_id": c.id, "content": json.dumps({"value": 42})})


async def run(base_url: str, n: int, concurrency: int, two_step: bool) -> None:
    client = AsyncOpenAI(base_url=base_url, api_key="bench", max_retries=0)
    semaphore = asyncio.Semaphore(concurrency)

    async def bounded(i: int) -> None:
        async with semaphore:
            await one(client, i, two_step)

    await asyncio.gather(*(bounded(i) for i in range(n)))
    await client.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base-url", required=True)
    parser.add_argument("-n", type=int, default=200)
    parser.add_argument("-c", type=int, default=32)
    parser.add_argument("--two-step", action="store_true")
    args = parser.parse_args()
    asyncio.run(run(args.base_url, args.n, args.c, args.two_step))


if __name__ == "__main__":
    main()
