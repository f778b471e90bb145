"""Upstream driver for darts-tft-attention-mask-cached-plain-attribute: a real ``darts.models.
TFTModel`` trained on "cuda", then moved to the CPU for its forecasts.

unit8co/darts#3052. ``_TFTModule`` caches its causal attention mask in a plain attribute and
rebuilds it only when the batch size changes; ``Module.to()`` never moves it. A model fitted with
``pl_trainer_kwargs={"accelerator": "gpu"}`` and then switched with ``model.to_cpu()`` predicts
on the CPU with the CUDA mask as soon as a batch has the size of the last training batch, and
``masked_fill`` in the attention refuses it. 0.44.0 (PR #3053) registers the mask as a
non-persistent buffer. Run by tests/upstream with one release on PYTHONPATH.
"""

from __future__ import annotations

import numpy as np
import torch
from _report import imported, report

N_SERIES = 4  # also the batch size: every training batch and the forecast batch hold 4 series


def main() -> None:
    import darts
    from darts import TimeSeries
    from darts.models import TFTModel
    from pytorch_lightning import Callback

    imported(darts, "darts")
    trained_on = set()

    class WhereItTrains(Callback):
        """Where the module's weights and the cached mask are during the training steps."""

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            trained_on.add((str(next(pl_module.parameters()).device), str(pl_module.attention_mask.device)))

    rng = np.random.default_rng(0)
    t = np.arange(20, dtype=np.float32)
    # four short series, each with one future covariate (known ahead: a calendar-like cycle);
    # with future covariates the default add_relative_index=False path runs, whose first
    # consumer of the cached tensors is the attention's masked_fill
    series = [TimeSeries.from_values(np.sin(t / (3 + i)) + 0.1 * rng.standard_normal(20).astype(np.float32))
              for i in range(N_SERIES)]
    future = [TimeSeries.from_values(np.cos(np.arange(22, dtype=np.float32) / 4)) for _ in range(N_SERIES)]
    model = TFTModel(
        input_chunk_length=4, output_chunk_length=2, hidden_size=8, lstm_layers=1,
        num_attention_heads=2, hidden_continuous_size=4, dropout=0.0, batch_size=N_SERIES,
        n_epochs=1, likelihood=None, loss_fn=torch.nn.MSELoss(), random_state=0,
        pl_trainer_kwargs={"accelerator": "gpu", "devices": [0], "enable_progress_bar": False,
                           "enable_model_summary": False, "callbacks": [WhereItTrains()]},
    )
    # 4 series x 15 windows = 60 samples: 15 training batches of 4 on the GPU
    model.fit(series, future_covariates=future)
    module = model.model
    # Lightning's teardown after fit() moves the module back to the CPU; the mask stays put
    report(event="fit done", trained_on=sorted(trained_on), module_device=str(next(module.parameters()).device),
           mask_device=str(module.attention_mask.device), batch_size_last=module.batch_size_last)
    # then the forecasts on the CPU (the darts way to move a trained model: the next
    # predict() builds a CPU trainer, which moves the module to the CPU)
    model.to_cpu()
    forecast = model.predict(n=2, series=series, future_covariates=future)
    report(event="done", forecast=[float(f.values()[0, 0]) for f in forecast],
           module_device=str(next(module.parameters()).device),
           mask_device=str(module.attention_mask.device))


if __name__ == "__main__":
    main()
