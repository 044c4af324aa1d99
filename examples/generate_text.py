"""Greedy generation with a small causal LM, written for GPUs.

Typical inference code: prompts padded to the longest in each batch, a decode loop bounded
by a length read from a tensor, tokens written one Python index at a time, and
de-duplicated token ids for a repetition penalty; and a perplexity loop whose collate
function pads each batch to its longest text.
"""

import torch
from torch.utils.data import DataLoader
from transformers import AutoModelForCausalLM, AutoTokenizer


@torch.no_grad()
def generate(model, tokenizer, prompts, max_new_tokens=32, device="cuda"):
    batch = tokenizer(prompts, padding=True, return_tensors="pt").to(device)
    tokens = batch["input_ids"]
    budget = torch.full((tokens.shape[0],), max_new_tokens, device=device)
    out = torch.zeros(tokens.shape[0], max_new_tokens, dtype=torch.long, device=device)
    for i in range(int(budget.max())):
        logits = model(tokens).logits[:, -1, :]
        seen = torch.unique(tokens)
        logits[:, seen] /= 1.2
        next_token = logits.argmax(-1)
        out[:, i] = next_token
        tokens = torch.cat([tokens, next_token[:, None]], dim=1)
    return tokenizer.batch_decode(out)


@torch.no_grad()
def perplexity(model, tokenizer, texts, device="cuda"):
    loader = DataLoader(
        texts,
        batch_size=8,
        collate_fn=lambda b: tokenizer(b, padding="longest", return_tensors="pt"),
    )
    losses = []
    for batch in loader:
        batch = batch.to(device)
        losses.append(model(**batch, labels=batch["input_ids"]).loss)
    return torch.exp(torch.stack(losses).mean())


if __name__ == "__main__":
    tokenizer = AutoTokenizer.from_pretrained("gpt2")
    model = AutoModelForCausalLM.from_pretrained("gpt2").cuda().eval()
    print(generate(model, tokenizer, ["XLA compiles", "A TPU is"]))
