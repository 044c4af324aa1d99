"""MNIST on a TPU as the 2019 tutorials wrote it, with the `torch_xla_py` package.

Neither `torch_xla_py` nor its `DataParallel` exist any more: this file fails at import.
"""

import torch
import torch.nn as nn
import torch_xla_py.data_parallel as dp
import torch_xla_py.xla_model as xm


def train_loop_fn(model, loader, device, context):
    loss_fn = nn.CrossEntropyLoss()
    optimizer = context.getattr_or(
        "optimizer", lambda: torch.optim.SGD(model.parameters(), lr=0.01)
    )
    for x, (data, target) in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(data), target)
        loss.backward()
        xm.optimizer_step(optimizer)


def main(model_fn, train_loader):
    devices = xm.get_xla_supported_devices()
    model_parallel = dp.DataParallel(model_fn, device_ids=devices)
    for epoch in range(1, 11):
        model_parallel(train_loop_fn, train_loader)
