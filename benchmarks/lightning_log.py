"""What Lightning's `self.log(...)` of a tensor reads on the host per step on an XLA device:
the measurement behind XLA104's progress-bar finding.

Needs a venv with torch 2.9.0, torch-xla 2.9.0 and lightning (not xlalint's own):

    python -m venv /tmp/venv-lightning
    /tmp/venv-lightning/bin/pip install torch==2.9.0 torch-xla==2.9.0 lightning==2.5.6
    /tmp/venv-lightning/bin/python benchmarks/lightning_log.py [VARIANT ...]

Each variant (no_log, log, log_prog_bar, log_on_epoch, log_prog_bar_on_epoch) trains 12
steps of a small model with `Trainer(accelerator="tpu")` on `PJRT_DEVICE=CPU` in a fresh
process, and counts device-to-host transfers, `_local_scalar_dense` reads and executions
over steps 3-12.
Lightning offers its XLA accelerator only where it finds TPUs, so the child lets it run on
the CPU PJRT device (the same runtime) by patching its availability checks.
"""

from __future__ import annotations

import os
import subprocess
import sys

CHILD = r"""
import json, sys, warnings
warnings.simplefilter("ignore")
import torch, torch_xla
import torch_xla.debug.metrics as met
import lightning as L
from lightning.pytorch.accelerators import XLAAccelerator
# Lightning offers its XLA accelerator only where it sees TPUs; the CPU PJRT device is the
# same XLA runtime, so let the accelerator run there.
XLAAccelerator.is_available = staticmethod(lambda: True)
XLAAccelerator.auto_device_count = staticmethod(lambda: 1)
from lightning.fabric.accelerators.xla import XLAAccelerator as FabricXLAAccelerator
FabricXLAAccelerator.is_available = staticmethod(lambda: True)
FabricXLAAccelerator.auto_device_count = staticmethod(lambda: 1)

VARIANT = sys.argv[1]
STEPS = 12

class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(16, 4)
    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.net(x), y)
        if VARIANT == "log":
            self.log("loss", loss)
        elif VARIANT == "log_prog_bar":
            self.log("loss", loss, prog_bar=True)
        elif VARIANT == "log_on_epoch":
            self.log("loss", loss, on_step=False, on_epoch=True)
        elif VARIANT == "log_prog_bar_on_epoch":
            self.log("loss", loss, on_step=False, on_epoch=True, prog_bar=True)
        return loss
    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

class Window(L.Callback):
    def on_train_batch_start(self, trainer, module, batch, batch_idx):
        if batch_idx == 2:
            met.clear_all()
    def on_train_epoch_end(self, trainer, module):
        d2h = met.metric_data("TransferFromDeviceTime")
        self.result = {
            "d2h": d2h[0] if d2h else 0,
            "scalar_reads": met.counter_value("aten::_local_scalar_dense") or 0,
            "executions": met.counter_value("ExecuteComputation") or 0,
        }

torch.manual_seed(0)
data = torch.utils.data.TensorDataset(torch.randn(STEPS * 8, 16), torch.randn(STEPS * 8, 4))
loader = torch.utils.data.DataLoader(data, batch_size=8)
window = Window()
trainer = L.Trainer(accelerator="tpu", devices=1, max_epochs=1, callbacks=[window],
                    enable_checkpointing=False, logger=VARIANT != "no_logger",
                    log_every_n_steps=50, enable_model_summary=False,
                    enable_progress_bar=True)
trainer.fit(Model(), loader)
print("RESULT " + json.dumps({"steps_measured": STEPS - 2, **window.result}))
"""

VARIANTS = ("no_log", "log", "log_prog_bar", "log_on_epoch", "log_prog_bar_on_epoch")
for variant in sys.argv[1:] or VARIANTS:
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, variant],
        capture_output=True,
        text=True,
        env={**os.environ, "PJRT_DEVICE": "CPU"},
        timeout=900,
    )
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")), None)
    print(variant, line[7:] if line else "failed: " + proc.stderr.strip()[-300:], flush=True)
