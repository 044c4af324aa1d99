"""A typical GPU training script, as people write it before porting to TPUs.

`xlalint check examples/` flags what would make it slow (or break) on an XLA device.
"""

import argparse
import logging

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

logger = logging.getLogger(__name__)


class MLP(nn.Module):
    def __init__(self, width: int = 128) -> None:
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(64, width), nn.ReLU(), nn.Linear(width, 10))

    def forward(self, x):
        logits = self.layers(x)
        if torch.isnan(logits).any():
            raise FloatingPointError("NaN in logits")
        return logits


def clip_gradients(model, max_norm: float = 1.0):
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    total_norm = torch.norm(torch.stack([g.norm(2) for g in grads]), 2)
    clip_coef = max_norm / (total_norm + 1e-6)
    if clip_coef < 1:
        for g in grads:
            g.mul_(clip_coef)
    return total_norm


def evaluate(model, loader, device):
    model.eval()
    correct = 0
    predictions = []
    with torch.no_grad():
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            preds = model(x).argmax(dim=-1)
            correct += (preds == y).sum().item()
            predictions.append(preds.cpu().numpy())
    return correct / len(loader.dataset), predictions


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()

    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.backends.cudnn.benchmark = True

    data = TensorDataset(torch.randn(512, 64), torch.randint(0, 10, (512,)))
    loader = DataLoader(data, batch_size=32, shuffle=True)
    model = MLP().cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scaler = torch.cuda.amp.GradScaler()

    for epoch in range(args.epochs):
        model.train()
        running_loss = 0.0
        for step, (x, y) in enumerate(loader):
            x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
            optimizer.zero_grad()
            with torch.autocast("cuda", dtype=torch.float16):
                loss = F.cross_entropy(model(x), y)
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
            clip_gradients(model)
            scaler.step(optimizer)
            scaler.update()
            running_loss += loss.item()
            if step % 10 == 0:
                print(f"epoch {epoch} step {step} loss {loss}")
                logger.info("grad norm %s", model.layers[0].weight.grad.norm())
        accuracy, _ = evaluate(model, loader, device)
        print(f"epoch {epoch}: loss {running_loss / len(loader):.4f} accuracy {accuracy:.3f}")
    torch.cuda.synchronize()
    torch.save(model.state_dict(), "mlp.pt")


if __name__ == "__main__":
    main()
