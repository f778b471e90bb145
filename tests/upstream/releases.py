"""Which real releases the upstream tier runs, what each must do, and how it is driven.

For each case: the PyPI distribution, its releases in order with the expected outcome
("fail": the case's documented exception and message, raised inside the library; "pass":
runs, on the accelerator), the extra pinned installs the import needs (the same for every
release of a case, so that only the library differs), and the driver in ``drivers/``.
The pair named by the case's versions is always included; neighbours that bound the affected
range are added where they are cheap.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

FAIL, PASS = "fail", "pass"

Check = Callable[[str, list[dict]], list[str]]


@dataclass(frozen=True)
class Release:
    version: str
    expected: str  # FAIL or PASS
    # companions pinned by this release itself (transformers pins a tokenizers minor per
    # release); everything else is the case's `requirements`, the same for every release
    requirements: tuple[str, ...] = ()


@dataclass(frozen=True)
class UpstreamCase:
    slug: str
    package: str  # the PyPI distribution
    releases: tuple[Release, ...]
    requirements: tuple[str, ...]  # pinned, installed with --no-deps next to the release
    how: str  # one sentence for the record and the page: the real code path the driver runs
    # (file suffix, function): a failure must be raised through this frame of the installed
    # release -- the buggy line's function, so that a device error elsewhere does not count
    failure_frame: tuple[str, str]
    timeout: float = 180.0
    check: Check | None = field(default=None)  # case-specific checks of the driver's reports

    @property
    def driver(self) -> str:
        return f"{self.slug}.py"


def _events(reports: list[dict], event: str) -> list[dict]:
    return [r for r in reports if r.get("event") == event]


def _lycoris_check(expected: str, reports: list[dict]) -> list[str]:
    """A passing run must have gone through the CP branch (the one that held the bug)."""
    done = _events(reports, "done")
    if expected == PASS and done and not any(k.endswith(".lora_mid.weight") for k in done[0]["keys"]):
        return [f"extract_diff never reached the CP (lora_mid) branch: keys {done[0]['keys']}"]
    return []


def _lightning_check(expected: str, reports: list[dict]) -> list[str]:
    """Both ranks finish the LR finder (a failure must come from the real fit); a passing run
    reports from both ranks with equal synced metrics."""
    problems = []
    if {r["rank"] for r in _events(reports, "lr_find done")} != {0, 1}:
        problems.append("the LR finder did not finish on both ranks")
    if expected == PASS:
        done = _events(reports, "done")
        if {r["rank"] for r in done} != {0, 1}:
            problems.append(f"expected a result from ranks 0 and 1, got {done}")
        elif done[0]["metrics"] != done[1]["metrics"] or not done[0]["metrics"]:
            problems.append(f"the ranks' synced metrics differ or are missing: {done}")
    return problems


def _device_map_check(expected: str, reports: list[dict]) -> list[str]:
    """A passing run must really have been split over both GPUs, the head on the last."""
    done = _events(reports, "done")
    if expected == PASS and done and (done[0]["placement"] != ["cuda:0", "cuda:1"]
                                      or done[0]["score_device"] != "cuda:1"):
        return [f"the model was not split with its head on cuda:1: {done[0]}"]
    return []


def _darts_tft_check(expected: str, reports: list[dict]) -> list[str]:
    """Both releases trained on the GPU (module and cached mask on cuda:0 in every training
    step); a passing run forecast on the CPU, mask included."""
    problems = []
    fit = _events(reports, "fit done")
    if not fit or fit[0]["trained_on"] != [["cuda:0", "cuda:0"]]:
        problems.append(f"the model did not train on cuda:0: {fit}")
    done = _events(reports, "done")
    if expected == PASS and done and (done[0]["module_device"], done[0]["mask_device"]) != ("cpu", "cpu"):
        problems.append(f"the forecast did not run on the CPU: {done[0]}")
    return problems


def _fsdp_offload_check(expected: str, reports: list[dict]) -> list[str]:
    """Under FSDP with parameter offload peft's `self.device` answered the CPU while the wrapper
    computed on cuda:0 (the condition of the bug); a passing run's logits are on cuda:0."""
    problems = []
    wrapped = _events(reports, "wrapped")
    if not wrapped or (wrapped[0]["self_device"], wrapped[0]["compute_device"]) != ("cpu", "cuda:0"):
        problems.append(f"self.device was not the CPU beside a cuda:0 compute device: {wrapped}")
    done = _events(reports, "done")
    if expected == PASS and done and done[0]["logits_device"] != "cuda:0":
        problems.append(f"the forward did not compute on cuda:0: {done[0]}")
    return problems


CASES: tuple[UpstreamCase, ...] = (
    UpstreamCase(
        slug="lightly-dino-loss-center",
        package="lightly",
        releases=(Release("1.5.10", PASS), Release("1.5.11", FAIL), Release("1.5.12", PASS)),
        # lightly.models.utils imports torchvision.ops; 0.28.0 is torch 2.13's torchvision
        requirements=("torchvision==0.28.0", "pillow==11.3.0"),
        how='`lightly.loss.DINOLoss(output_dim=8).to("cuda")`, then the loss of two CUDA '
            "teacher and student views (`forward` subtracts the center, then updates it).",
        failure_frame=("lightly/loss/dino_loss.py", "forward"),
    ),
    UpstreamCase(
        slug="lycoris-extract-diff-detach-cpu",
        package="lycoris-lora",
        releases=(Release("2.1.0.dev4", FAIL), Release("2.1.0.dev7", FAIL),
                  Release("2.1.0.dev8", PASS), Release("2.1.0", PASS)),
        # what `import lycoris` pulls in (lycoris/__init__.py imports kohya, modules, wrapper)
        requirements=("safetensors==0.8.0", "regex==2026.11.15", "tqdm==4.66.4",
                      "einops==0.8.2", "toml==0.10.2"),
        how='`lycoris.utils.extract_diff(..., extract_device="cuda")` on a base and a tuned '
            "model whose 3x3 `Conv2d` differs, fixed rank 2 with CP decomposition "
            "(`small_conv=True`): the branch that builds `lora_mid`.",
        failure_frame=("lycoris/utils/__init__.py", "make_state_dict"),
        check=_lycoris_check,
    ),
    UpstreamCase(
        slug="lightning-lr-find-ddp-sync-dist",
        package="pytorch-lightning",
        releases=(Release("2.0.9", PASS), Release("2.1.0", FAIL), Release("2.3.3", FAIL),
                  Release("2.4.0", PASS)),
        # setuptools: pytorch_lightning/__init__.py calls pkg_resources, gone from setuptools 81
        requirements=("torchmetrics==1.4.1", "lightning-utilities==0.11.6", "tqdm==4.66.4",
                      "setuptools==70.3.0"),
        how="A whole `pytorch_lightning.Trainer` as a GPU user writes it (`accelerator=\"gpu\"`, "
            "`devices=2`, `DDPStrategy`: two processes, NCCL, `device_ids`) on a simulated machine "
            "of two GPUs: `Tuner(trainer).lr_find(...)`, then `trainer.fit(...)`, losses logged "
            "with `sync_dist=True`.",
        # _ResultMetric.compute syncs the mean's batch count, left on the CPU by the finder
        failure_frame=("pytorch_lightning/trainer/connectors/logger_connector/result.py", "compute"),
        timeout=300.0,
        check=_lightning_check,
    ),
    UpstreamCase(
        slug="timm-model-ema-v3-force-cpu",
        package="timm",
        releases=(Release("0.9.16", FAIL), Release("1.0.3", PASS)),
        # what `import timm` needs: torchvision (torch 2.13's, pure-Python parts), the hub
        # client and its progress bars, Pillow for timm.data
        requirements=("torchvision==0.28.0", "pillow==11.3.0", "huggingface-hub==0.23.0",
                      "tqdm==4.66.4"),
        how='`timm.create_model("resnet10t")` moved to "cuda", `timm.utils.ModelEmaV3(model, '
            "device='cpu')` as `train.py --model-ema --model-ema-force-cpu` builds it, then two "
            "SGD steps each followed by `model_ema.update(model)`.",
        failure_frame=("timm/utils/model_ema.py", "apply_update_"),
    ),
    UpstreamCase(
        slug="peft-adalora-ranknum-left-on-cpu",
        package="peft",
        releases=(Release("0.3.0", FAIL), Release("0.4.0", PASS)),
        # what `import peft` pulls in, pinned to releases of the same months (mid 2023);
        # setuptools: accelerate 0.19's utils import pkg_resources, gone from setuptools 81
        requirements=("transformers==4.29.2", "accelerate==0.19.0", "huggingface-hub==0.14.1",
                      "tokenizers==0.13.3", "regex==2026.11.15", "tqdm==4.66.4",
                      "setuptools==70.3.0"),
        how="A tiny `transformers.BertForSequenceClassification` (from a config) moved to "
            '"cuda", then `peft.get_peft_model(model, AdaLoraConfig(target_modules=["query", '
            '"value"]))`, one forward pass with labels and `backward()`.',
        failure_frame=("peft/tuners/adalora.py", "forward"),
    ),
    UpstreamCase(
        slug="transformers-device-map-labels-last-gpu",
        package="transformers",
        releases=(Release("4.45.2", PASS, ("tokenizers==0.20.3",)),
                  Release("4.46.0", FAIL, ("tokenizers==0.20.3",)),
                  Release("4.47.1", FAIL, ("tokenizers==0.21.0",)),
                  Release("4.48.0", PASS, ("tokenizers==0.21.0",))),
        # device_map needs accelerate; releases of the same months (tokenizers, whose range
        # each transformers release checks at import, is pinned per release above)
        requirements=("accelerate==1.2.1", "huggingface-hub==0.27.0", "regex==2026.11.15",
                      "tqdm==4.66.4"),
        how="A tiny `LlamaForSequenceClassification` (from a config, four layers) saved and "
            'loaded back with `from_pretrained(..., device_map="auto", max_memory=...)` split '
            "over a simulated machine of two GPUs, the score head on `cuda:1`; then one forward "
            "pass with labels on `cuda:0` and `backward()`.",
        failure_frame=("transformers/loss/loss_utils.py", "fixed_cross_entropy"),
        timeout=240.0,
        check=_device_map_check,
    ),
    UpstreamCase(
        slug="transformers-idefics3-bucketize-boundaries",
        package="transformers",
        releases=(Release("4.54.1", PASS), Release("4.55.0", FAIL), Release("4.55.1", PASS)),
        # releases of the same weeks (August 2025); no tokenizer runs, but transformers checks
        # the version of an installed tokenizers, and its GGUF integration imports it
        requirements=("tokenizers==0.21.4", "huggingface-hub==0.34.4", "regex==2026.11.15",
                      "tqdm==4.66.4"),
        how="The vision tower of Idefics3 (`Idefics3VisionTransformer`, tiny, from a config) on "
            '"cuda": one forward pass of two 32x32 images with a full patch attention mask.',
        failure_frame=("transformers/models/idefics3/modeling_idefics3.py", "forward"),
    ),
    UpstreamCase(
        slug="darts-tft-attention-mask-cached-plain-attribute",
        package="darts",
        releases=(Release("0.43.0", FAIL), Release("0.44.0", PASS)),
        # what `from darts.models import TFTModel`, fit and predict import in either release
        # (0.43.0 also imports xarray, statsmodels and nfoursid at import time), pinned to
        # releases of the same weeks (April 2026; pytorch-lightning<2.5.3 is darts' own
        # bound); shap, pyod and the extras are never imported
        requirements=("pandas==3.0.2", "scipy==1.17.1", "scikit-learn==1.8.0", "joblib==1.5.3",
                      "threadpoolctl==3.6.0", "holidays==0.95", "narwhals==2.20.0",
                      "xarray==2026.4.0", "statsmodels==0.14.6", "patsy==1.0.2",
                      "nfoursid==1.0.2", "matplotlib==3.10.9", "cycler==0.12.1",
                      "kiwisolver==1.5.0", "pillow==12.2.0", "pyparsing==3.3.2",
                      "pytz==2026.1.post1", "tqdm==4.67.3", "pytorch-lightning==2.5.2",
                      "lightning-utilities==0.15.3", "torchmetrics==1.9.0"),
        how="A tiny `darts.models.TFTModel` with a future covariate, fitted on four series with "
            '`pl_trainer_kwargs={"accelerator": "gpu", "devices": [0]}` (batches of four), then '
            "`model.to_cpu()` and `model.predict(n=2, ...)` for the same four series: one "
            "batch of four on the CPU.",
        # _TFTModule.forward reuses the cached mask; masked_fill in the attention raises
        failure_frame=("darts/models/forecasting/tft_model.py", "forward"),
        check=_darts_tft_check,
    ),
    UpstreamCase(
        slug="peft-prompt-tuning-fsdp-cpu-offload-self-device",
        package="peft",
        releases=(Release("0.3.0", FAIL), Release("0.4.0", PASS)),
        # the same as peft-adalora-ranknum-left-on-cpu's
        requirements=("transformers==4.29.2", "accelerate==0.19.0", "huggingface-hub==0.14.1",
                      "tokenizers==0.13.3", "regex==2026.11.15", "tqdm==4.66.4",
                      "setuptools==70.3.0"),
        how="`peft.get_peft_model(LlamaForCausalLM(tiny config), PromptTuningConfig(...))` wrapped "
            "in the real `torch.distributed.fsdp.FullyShardedDataParallel` with "
            "`CPUOffload(offload_params=True)` and peft's own `fsdp_auto_wrap_policy` (one "
            'process, a process group of one with `backend="nccl"`, one simulated GPU), then the '
            "forward passes of an evaluation loop with labels on cuda:0 (the failing line is in "
            "`forward`, so evaluation fails as training does).",
        failure_frame=("peft/peft_model.py", "forward"),
        check=_fsdp_offload_check,
    ),
)
