"""A PyTorch Lightning program (Trainer, callbacks, CSV logging, checkpoints, Fabric, a compiled
module), run by tests/integration/test_lightning.py once with PyTorch and once under
``python -m ember.as_torch``; it writes what it saw as JSON to ``argv[1]/result.json``
(``--compile``: also fit a ``torch.compile``d module), and fits once under Lightning's
``profiler="pytorch"``.

Float64 throughout (``precision="64-true"``), so that the two runs agree to rounding."""

import glob
import json
import os
import sys

import lightning as L
import torch
import torch.nn.functional as F
from lightning.pytorch.callbacks import EarlyStopping, LearningRateMonitor, ModelCheckpoint
from lightning.pytorch.loggers import CSVLogger
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

root = sys.argv[1]


class LitModel(L.LightningModule):
    def __init__(self, hidden=16, lr=0.05):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(8, hidden), nn.ReLU(), nn.Linear(hidden, 3))

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self(x), y)
        self.log("train_loss", loss, on_step=True, on_epoch=True, prog_bar=True)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        self.log("val_loss", F.cross_entropy(logits, y))
        self.log("val_acc", (logits.argmax(1) == y).double().mean())

    def test_step(self, batch, batch_idx):
        x, y = batch
        self.log("test_loss", F.cross_entropy(self(x), y))

    def predict_step(self, batch, batch_idx, dataloader_idx=0):
        return self(batch[0]).softmax(-1)

    def configure_optimizers(self):
        opt = torch.optim.Adam(self.parameters(), lr=self.hparams.lr)
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=4, gamma=0.5)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


def weights(module):
    return {k: v.double().sum().item() for k, v in module.state_dict().items()}


def main():
    res = {}
    L.seed_everything(0)
    X = torch.randn(96, 8, dtype=torch.float64)
    Y = (X @ torch.randn(8, 3, dtype=torch.float64)).argmax(1)
    train = DataLoader(TensorDataset(X, Y), batch_size=16, shuffle=True)
    val = DataLoader(TensorDataset(X[:32], Y[:32]), batch_size=16)

    model = LitModel()
    trainer = L.Trainer(
        max_epochs=3, accelerator="cpu", devices=1, precision="64-true",
        logger=CSVLogger(root, name="lg"), default_root_dir=root,
        callbacks=[ModelCheckpoint(monitor="val_loss", save_top_k=2, save_last=True),
                   EarlyStopping(monitor="val_loss", patience=5),
                   LearningRateMonitor(logging_interval="step")],
        gradient_clip_val=0.5, accumulate_grad_batches=2, log_every_n_steps=1,
        enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(model, train, val)
    res["global_step"] = trainer.global_step
    res["callback_metrics"] = {k: v.item() for k, v in sorted(trainer.callback_metrics.items())}
    res["validate"] = trainer.validate(model, val, verbose=False)
    res["test"] = trainer.test(model, val, verbose=False)
    res["predict"] = torch.cat(trainer.predict(model, val)).sum(0).tolist()
    res["weights"] = weights(model)
    ckpts = sorted(glob.glob(f"{root}/**/*.ckpt", recursive=True))
    res["checkpoints"] = [os.path.basename(c) for c in ckpts]
    last = next(c for c in ckpts if c.endswith("last.ckpt"))
    reloaded = LitModel.load_from_checkpoint(last)
    res["reloaded"] = weights(reloaded)
    res["reloaded_hparams"] = dict(reloaded.hparams)
    ckpt = torch.load(last, weights_only=False)
    res["checkpoint_keys"] = sorted(ckpt)
    res["checkpoint_epoch_step"] = [ckpt["epoch"], ckpt["global_step"]]
    metrics = glob.glob(f"{root}/**/metrics.csv", recursive=True)[0]
    with open(metrics) as f:
        rows = f.read().splitlines()
    res["csv_header"] = rows[0]
    res["csv_rows"] = len(rows)
    res["lr_logged"] = [r for r in rows if r.split(",")[0]][-1]

    # resume from the last checkpoint for one more epoch
    resumed = L.Trainer(max_epochs=4, accelerator="cpu", devices=1, precision="64-true",
                        logger=False, enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False, default_root_dir=root)
    model2 = LitModel()
    resumed.fit(model2, train, val, ckpt_path=last)
    res["resumed_step"] = resumed.global_step
    res["resumed"] = weights(model2)

    # a compiled LightningModule (``--compile``: PyTorch 2.13's Dynamo fails on Lightning's
    # logging) trains as the eager one does
    for kind in ("eager", "compiled") if "--compile" in sys.argv else ("eager",):
        L.seed_everything(1)
        lit = LitModel()
        tr = L.Trainer(max_epochs=1, accelerator="cpu", devices=1, precision="64-true",
                       logger=False, enable_checkpointing=False, enable_progress_bar=False,
                       enable_model_summary=False)
        tr.fit(torch.compile(lit) if kind == "compiled" else lit, train)
        res[f"seed1_{kind}"] = weights(lit)

    # the same fit under Lightning's PyTorch profiler (a __torch_function__ mode in Ember):
    # self.log's reduce_fx=torch.mean must stay torch.mean while it records
    L.seed_everything(1)
    lit = LitModel()
    tr = L.Trainer(max_epochs=1, accelerator="cpu", devices=1, precision="64-true",
                   logger=False, enable_checkpointing=False, enable_progress_bar=False,
                   enable_model_summary=False, profiler="pytorch", default_root_dir=root)
    tr.fit(lit, train)
    res["seed1_profiled"] = weights(lit)
    res["profiled_metrics"] = {k: v.item() for k, v in sorted(tr.callback_metrics.items())}

    # Fabric: a hand-written loop
    fabric = L.Fabric(accelerator="cpu", devices=1, precision="64-true")
    fabric.seed_everything(2)
    net = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 3))
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    net, opt = fabric.setup(net, opt)
    loader = fabric.setup_dataloaders(DataLoader(TensorDataset(X, Y), batch_size=16))
    losses = []
    for x, y in loader:
        opt.zero_grad()
        loss = F.cross_entropy(net(x), y)
        fabric.backward(loss)
        fabric.clip_gradients(net, opt, max_norm=1.0)
        opt.step()
        losses.append(loss.item())
    res["fabric_losses"] = losses
    path = os.path.join(root, "fabric.ckpt")
    fabric.save(path, {"model": net, "optimizer": opt, "step": 7})
    state = {"model": net, "optimizer": opt, "step": 0}
    fabric.load(path, state)
    res["fabric_step"] = state["step"]
    res["fabric_weights"] = weights(net)

    # Ember only: whether anything made __torch_function__ dispatch active (a cost per op)
    active = getattr(torch.overrides, "is_active", None)
    res["dispatch"] = None if active is None else active()
    with open(os.path.join(root, "result.json"), "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
