"""Multi-core training written for an older torch_xla: what users bring to torch_xla 2.9.

It runs (or ran) on a TPU, but with the APIs and habits of earlier releases: removed runtime
calls, deprecated device and barrier functions, env-var precision, a plain DataLoader, an
optimizer step that skips the gradient all-reduce, and checkpoints saved from the device.
"""

import copy
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.debug.profiler as xp
import torch_xla.distributed.xla_multiprocessing as xmp
from torch.utils.data import DataLoader, TensorDataset

os.environ["XLA_USE_BF16"] = "1"
os.environ["XLA_IR_DEBUG"] = "1"


class Tagger(nn.Module):
    def __init__(self, vocab: int = 1000, classes: int = 8) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, 64)
        self.mix = nn.Linear(64, 64)
        self.head = nn.Linear(64, classes)

    def forward(self, tokens, lengths):
        hidden = self.embed(tokens)
        for _ in range(int(lengths.min()) // 8):
            hidden = hidden + torch.tanh(self.mix(hidden))
        states = torch.stack([hidden[i, : lengths[i]].mean(0) for i in range(hidden.shape[0])])
        return self.head(states)


def masked_loss(logits, labels, ignore):
    losses = F.cross_entropy(logits, labels, reduction="none")
    return losses[labels != ignore].mean()


def train(index):
    device = xm.xla_device()
    world = xm.xrt_world_size()
    data = TensorDataset(
        torch.randint(0, 1000, (512, 32)),
        torch.randint(1, 33, (512,)),
        torch.randint(0, 8, (512,)),
    )
    loader = DataLoader(data, batch_size=64 // world, shuffle=True, drop_last=True)
    model = Tagger().to(device)
    best = copy.copy(model.head.weight)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for step, (tokens, lengths, labels) in enumerate(loader):
        tokens, lengths, labels = tokens.to(device), lengths.to(device), labels.to(device)
        labels[lengths < 4] = 0
        with xp.Trace("train_step"):
            optimizer.zero_grad()
            loss = masked_loss(model(tokens, lengths), labels, ignore=0)
            loss.backward()
            optimizer.step()
            xm.mark_step()
        if xm.get_ordinal() == 0 and step % 10 == 0:
            print(torch_xla._XLAC._xla_metrics_report())
    finetune(model, loader, device)
    torch.save(model.state_dict(), f"tagger-{index}.pt")
    model.load_state_dict(torch.load(f"tagger-{index}.pt", map_location=device))
    return best


def finetune(model, loader, device):
    optimizer = torch.optim.SGD(model.head.parameters(), lr=1e-2)
    for tokens, lengths, labels in loader:
        weights = torch.linspace(0.5, 1.0, 8).to(device)
        logits = model(tokens.to(device), lengths.to(device))
        loss = F.cross_entropy(logits, labels.to(device), weight=weights)
        loss.backward()
        xm.optimizer_step(optimizer)


if __name__ == "__main__":
    xmp.spawn(train, args=())
