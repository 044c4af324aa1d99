"""A training script that already runs on an XLA device, but slowly.

It was ported by changing the device only: every step still reads the loss on the host,
counts and averages over a boolean mask (CPU fallbacks), and nothing cuts the graph
between steps. Try it on the XLA CPU device:

    xlalint profile -- python examples/train_xla_slow.py
    xlalint fix --verify --unsafe-fixes -- python examples/train_xla_slow.py
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

STEPS = 6


def masked_loss(logits, labels, keep):
    losses = F.cross_entropy(logits, labels, reduction="none")
    return losses[keep].mean()


def main() -> None:
    torch.manual_seed(0)
    device = xm.xla_device()
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    inputs = torch.randn(STEPS, 32, 64)
    labels = torch.randint(0, 10, (STEPS, 32))
    total_loss = 0.0
    kept = 0.0
    for batch, (x, y) in enumerate(zip(inputs, labels)):
        x, y = x.to(device), y.to(device)
        keep = y != 0
        optimizer.zero_grad()
        loss = masked_loss(model(x), y, keep)
        loss.backward()
        optimizer.step()
        total_loss += loss.item()
        kept += keep.nonzero().shape[0] / keep.numel()
    print(f"batches {batch + 1} kept {kept / STEPS:.4f} mean loss {total_loss / STEPS:.5f}")


if __name__ == "__main__":
    main()
