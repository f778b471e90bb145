"""The rules of ``samedevice check``: one entry per statically visible root cause.

Codes are grouped by family: ``SD`` + the family number + a two-digit index, so F1's rules are
``SD101``, ``SD102``…, F2's ``SD201``…, and F10's ``SD1001``. A code never changes meaning.

Each entry is the single source of its documentation (the generated *Rules* page of the site).
Which cases a rule comes from is a fact of each case, kept in its own file: ``check = ["SD201"]``
in ``cases/<slug>.toml``. ``tests/check`` requires exactly those findings on every case's
``broken.py`` and none on any ``fixed.py``; the Rules page lists each rule's cases from them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Rule:
    code: str
    name: str  # kebab-case, like Ruff's rule names
    family: str
    summary: str  # what it finds, one line (also the start of every message)
    why: str  # why it is a bug
    example: str  # code the rule flags
    instead: str  # what to write instead
    limits: str = ""  # what it cannot see (documented limits)


RULES: tuple[Rule, ...] = (
    Rule(
        code="SD101",
        name="module-attached-after-move",
        family="F1",
        summary="a module with parameters is attached to a model after the model was moved",
        why=(
            "`Module.to()` / `.cuda()` move the parameters and buffers that exist at the time of "
            "the call. A layer created afterwards (`nn.Linear(...)` without `device=`) is built "
            "on the CPU and stays there, while the rest of the model is on the accelerator; the "
            "first forward pass mixes the two."
        ),
        example=(
            "model = GPTModel(cfg)\n"
            "model.to(device)\n"
            "model.out_head = nn.Linear(768, 2)  # a new CPU layer\n"
        ),
        instead=(
            "model = GPTModel(cfg)\n"
            "model.out_head = nn.Linear(768, 2)\n"
            "model.to(device)  # after the last structural change\n"
        ),
        limits=(
            "It follows one function (or the module level) in order: a move in one function "
            "and the replacement in another are not connected, and layers created by library "
            "calls it cannot see (`get_peft_model(...)`) are not counted. Layers without "
            "parameters or buffers (`nn.ReLU()`, `nn.Dropout()`) are never flagged."
        ),
    ),
    Rule(
        code="SD201",
        name="plain-tensor-attribute",
        family="F2",
        summary="a tensor is kept in a plain module attribute that `.to()` does not move",
        why=(
            "`Module.to()` moves parameters, buffers and submodules. A tensor assigned to "
            "`self.name` in `__init__` (or a list or dict of tensors) is none of these: it stays "
            "where it was created, on the CPU, and the first method that combines it with the "
            "moved parameters or the inputs fails."
        ),
        example=(
            "class Detect(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.center = torch.zeros(1, 8)\n"
            "\n"
            "    def forward(self, x):\n"
            "        return x - self.center\n"
        ),
        instead=(
            "class Detect(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.register_buffer(\"center\", torch.zeros(1, 8))  # moves with .to()\n"
            "\n"
            "    def forward(self, x):\n"
            "        return x - self.center\n"
        ),
        limits=(
            "Only attributes assigned in `__init__` and read by another method of the same "
            "class are checked; a class (or a base class in the same file) that overrides "
            "`_apply`, `to` or `cuda`, or a `_apply` anywhere in the file that reassigns the "
            "attribute, is taken to move it itself."
        ),
    ),
    Rule(
        code="SD202",
        name="modules-in-plain-container",
        family="F2",
        summary="submodules are kept in a plain list or dict that `.to()` does not see",
        why=(
            "Only `nn.ModuleList` / `nn.ModuleDict` (and `nn.Sequential`) register their items "
            "as children. Modules in a plain `list` or `dict` attribute are invisible to "
            "`.to()`, `.parameters()` and `state_dict()`: they stay on the CPU, are not "
            "trained by an optimizer built from `model.parameters()`, and are not saved."
        ),
        example=(
            "self.metrics = {\"train_acc\": BinaryAccuracy()}\n"
        ),
        instead=(
            "self.metrics = nn.ModuleDict({\"train_acc\": BinaryAccuracy()})\n"
        ),
        limits="Only containers built in `__init__` and used by another method are checked.",
    ),
    Rule(
        code="SD301",
        name="batch-member-not-moved",
        family="F3",
        summary="part of a batch is moved to the device and another part is not",
        why=(
            "A training or evaluation loop that unpacks a batch and moves some of its members "
            "(`images.to(device)`) but not another (`target`) hands the model's output and the "
            "unmoved member to the same loss or op: one is on the accelerator, the other on "
            "the CPU. Branches count: a member moved only in an `elif` is not moved when the "
            "`if` is taken."
        ),
        example=(
            "for images, target in loader:\n"
            "    images = images.to(device)\n"
            "    loss = criterion(model(images), target)  # target is on the CPU\n"
        ),
        instead=(
            "for images, target in loader:\n"
            "    images = images.to(device)\n"
            "    target = target.to(device)\n"
            "    loss = criterion(model(images), target)\n"
        ),
        limits=(
            "Only loops that unpack the batch into names are followed, and only calls of "
            "modules and torch functions count as a meeting (not `print` or a logger)."
        ),
    ),
    Rule(
        code="SD302",
        name="cpu-tensor-into-moved-model",
        family="F3",
        summary="a tensor created on the CPU is fed to a model moved to an accelerator",
        why=(
            "The model's parameters were moved with `.to(device)`, but the input was created "
            "by a factory without `device=` (or taken from a list of such tensors) and never "
            "moved: the first layer gets a CPU input and accelerator weights."
        ),
        example=(
            "model = Net().to(device)\n"
            "x = torch.rand(1, 28, 28)\n"
            "pred = model(x)\n"
        ),
        instead=(
            "model = Net().to(device)\n"
            "x = torch.rand(1, 28, 28).to(device)\n"
            "pred = model(x)\n"
        ),
        limits="The model and the input must both be visible in one function or at module level.",
    ),
    Rule(
        code="SD303",
        name="model-never-moved",
        family="F3",
        summary="a model whose methods send their input to a fixed accelerator is itself never moved",
        why=(
            "A helper method of the model moves the input to a device it names itself "
            "(`image.to(\"cuda\")`), while the script that builds the model never moves the "
            "model: the weights stay on the CPU and the first layer gets an accelerator input."
        ),
        example=(
            "model = DepthAnythingV2()  # infer_image() does image.to(\"cuda\")\n"
            "model.eval()\n"
            "depth = model.infer_image(raw_img)\n"
        ),
        instead=(
            "model = DepthAnythingV2().to(\"cuda\").eval()  # where infer_image() sends the image\n"
            "depth = model.infer_image(raw_img)\n"
        ),
        limits=(
            "The model class and the script that uses it must be in one file; a model passed "
            "to another function (which may move it) is not followed."
        ),
    ),
    Rule(
        code="SD401",
        name="factory-without-device",
        family="F4",
        summary="a tensor factory without `device=` meets a tensor that follows the input",
        why=(
            "`torch.zeros`, `torch.arange`, `torch.tensor([...])`, `torch.full` and the other "
            "factories create on the default device, the CPU, unless told otherwise. Inside "
            "`forward`, a loss or any function working on its arguments, the result then meets "
            "the input (or a parameter) in one op: on an accelerator that is a device error. "
            "Moving the model cannot fix it: the tensor is created anew on every call."
        ),
        example=(
            "def forward(self, v):\n"
            "    j = torch.arange(self.m)\n"
            "    return v[..., None] * j\n"
        ),
        instead=(
            "def forward(self, v):\n"
            "    j = torch.arange(self.m, device=v.device)  # or torch.zeros_like / v.new_zeros\n"
            "    return v[..., None] * j\n"
        ),
        limits=(
            "0-dim results (`torch.tensor(2.0)`) are never flagged: PyTorch lets a CPU scalar "
            "tensor meet an accelerator tensor. A value returned by another function is not "
            "followed into it."
        ),
    ),
    Rule(
        code="SD501",
        name="cpu-transfer-inside-expression",
        family="F5",
        summary="`.cpu()` is applied to one operand of an expression whose other operand stays on the device",
        why=(
            "A method chain binds tighter than an operator: in `a - f(b).detach().cpu()` only "
            "`f(b)` moves to the CPU, and the subtraction then mixes the device tensor `a` with "
            "a CPU tensor. The transfer belongs after the whole expression."
        ),
        example="diff = weight - torch.einsum(\"ij,jk->ik\", a, b).detach().cpu()\n",
        instead="diff = (weight - torch.einsum(\"ij,jk->ik\", a, b)).detach().cpu()\n",
        limits=(
            "The other operand must be visibly on the device: a parameter (`.weight`, "
            "`.bias`), a moved tensor or one created with `device=`, or a tensor argument. "
            "Chains that reduce to a scalar (`.sum().cpu()`) are not flagged."
        ),
    ),
    Rule(
        code="SD601",
        name="module-created-in-hook",
        family="F6",
        summary="a module with state is (re)created in a lifecycle hook, after the model was moved",
        why=(
            "Trainers such as PyTorch Lightning move the model to its device before they call "
            "the `on_*` hooks (`on_fit_start`, `on_validation_start`, …). A metric or layer "
            "created there is built on the CPU and never moved: it accumulates on the CPU, and "
            "under DDP its sync hands CPU tensors to NCCL."
        ),
        example=(
            "def on_validation_start(self):\n"
            "    self.acc_metric = MetricACC()\n"
        ),
        instead=(
            "def __init__(self):\n"
            "    super().__init__()\n"
            "    self.acc_metric = MetricACC()  # created once, moved with the module\n"
            "\n"
            "def on_validation_start(self):\n"
            "    self.acc_metric.reset()\n"
        ),
        limits="Only hooks named `on_*` of `nn.Module` / LightningModule classes are checked.",
    ),
    Rule(
        code="SD701",
        name="optimizer-state-loaded-before-move",
        family="F7",
        summary="optimizer state is loaded before the model is moved",
        why=(
            "`Optimizer.load_state_dict` casts the restored state (momentum, variance) to the "
            "device of each parameter *at the time of loading*. Loaded while the model is "
            "still on the CPU, the state stays there when the model moves afterwards, and the "
            "first `optimizer.step()` mixes CPU state with accelerator gradients."
        ),
        example=(
            "model = build_model()\n"
            "optimizer = torch.optim.AdamW(model.parameters())\n"
            "optimizer.load_state_dict(torch.load(\"optimizer.pt\"))\n"
            "model.to(device)\n"
        ),
        instead=(
            "model = build_model().to(device)  # move first\n"
            "optimizer = torch.optim.AdamW(model.parameters())\n"
            "optimizer.load_state_dict(torch.load(\"optimizer.pt\", map_location=device))\n"
        ),
        limits="The optimizer, the load and the move must be in one function or at module level.",
    ),
    Rule(
        code="SD702",
        name="helper-state-loaded-after-move",
        family="F7",
        summary="a helper object with its own `to()` loads state after it was moved, and is not moved again",
        why=(
            "An EMA or similar helper that is not an `nn.Module` keeps its tensors in plain "
            "attributes and moves them in its own `to()`. Its `load_state_dict` takes the "
            "loaded tensors as they are (on the CPU when the checkpoint was mapped there), so "
            "after loading it must be moved again."
        ),
        example=(
            "ema.to(device)\n"
            "...\n"
            "def load_model_hook(models, input_dir):\n"
            "    ema.load_state_dict(EMAModel.from_pretrained(input_dir).state_dict())\n"
        ),
        instead=(
            "def load_model_hook(models, input_dir):\n"
            "    ema.load_state_dict(EMAModel.from_pretrained(input_dir).state_dict())\n"
            "    ema.to(device)\n"
        ),
        limits=(
            "The helper class must be defined in the same file, with a `load_state_dict` that "
            "assigns attributes without moving them."
        ),
    ),
    Rule(
        code="SD801",
        name="dataparallel-without-device-ids",
        family="F8",
        summary="`DataParallel` without `device_ids` wraps a model moved to a GPU other than `cuda:0`",
        why=(
            "Without `device_ids`, `nn.DataParallel` uses every visible GPU and requires the "
            "parameters on the first, `cuda:0`. A model moved to `cuda:1` fails its check "
            "(`module must have its parameters and buffers on device cuda:0`)."
        ),
        example=(
            "model = net.to(\"cuda:1\")\n"
            "model = nn.DataParallel(model)\n"
        ),
        instead=(
            "model = net.to(\"cuda:1\")\n"
            "model = nn.DataParallel(model, device_ids=[\"cuda:1\"])\n"
        ),
        limits="The device must be a literal (or a name bound to one) with an index other than 0.",
    ),
    Rule(
        code="SD901",
        name="cpu-tensor-indexed-by-device-tensor",
        family="F9",
        summary="a tensor created on the CPU is indexed with a tensor that follows the input",
        why=(
            "Since PyTorch 1.13 indexing a CPU tensor with accelerator indices or a boolean "
            "mask is an error (`indices should be either on cpu or on the same device as the "
            "indexed tensor`). The indexed tensor came from a factory without `device=`."
        ),
        example=(
            "layer = torch.ones(len(b)) * i\n"
            "layer = layer[mask]  # mask computed on the GPU\n"
        ),
        instead=(
            "layer = torch.ones(len(b), device=mask.device) * i\n"
            "layer = layer[mask]\n"
        ),
        limits="Indexing an accelerator tensor with CPU indices is allowed and never flagged.",
    ),
    Rule(
        code="SD902",
        name="cpu-generator-for-device-sampling",
        family="F9",
        summary="a CPU `torch.Generator` is handed to a sampler that draws on another device",
        why=(
            "A random function draws on the device it is asked for and needs a generator of "
            "that device: `torch.randn(..., generator=cpu_generator, device=\"cuda\")` fails "
            "with `Expected a 'cuda' device type for generator but found 'cpu'`."
        ),
        example=(
            "generator = torch.Generator().manual_seed(0)\n"
            "noise = torch.randn(shape, generator=generator, device=device)\n"
        ),
        instead=(
            "generator = torch.Generator().manual_seed(0)\n"
            "noise = torch.randn(shape, generator=generator).to(device)  # draw on the CPU, then move\n"
        ),
        limits=(
            "The generator must be created without a device in the same file; it is followed "
            "through calls of functions and classes defined there."
        ),
    ),
    Rule(
        code="SD1001",
        name="load-without-map-location",
        family="F10",
        summary="`torch.load` without `map_location` where the code knows its target device",
        why=(
            "A checkpoint records the device of every tensor. Loaded without `map_location`, "
            "a checkpoint saved on a GPU needs that GPU: on a machine without CUDA `torch.load` "
            "stops with `Attempting to deserialize object on a CUDA device but "
            "torch.cuda.is_available() is False`. The function already knows where the "
            "tensors should go; pass it."
        ),
        example=(
            "def build_model(self, checkpoint):\n"
            "    model.load_state_dict(torch.load(checkpoint))\n"
            "    return model.to(self.device)\n"
        ),
        instead=(
            "def build_model(self, checkpoint):\n"
            "    model.load_state_dict(torch.load(checkpoint, map_location=self.device))\n"
            "    return model.to(self.device)\n"
        ),
        limits=(
            "Only loads in a function that names a device (`device`, `self.device`, `.to(…)`) "
            "are flagged, and not files the same program saved with `torch.save`; a wrapper "
            "defined in the same file that passes its own `map_location=None` on is followed."
        ),
    ),
)

BY_CODE: dict[str, Rule] = {r.code: r for r in RULES}
_CODE = re.compile(r"SD\d{3,4}")


def family_of(code: str) -> str:
    return BY_CODE[code].family


def expand_selector(selector: str) -> set[str]:
    """``SD2`` -> every F2 rule, ``SD201`` -> one rule, ``ALL`` -> all. Raises ValueError."""
    sel = selector.strip().upper()
    if sel == "ALL":
        return set(BY_CODE)
    if not re.fullmatch(r"SD\d{1,4}", sel):
        raise ValueError(f"{selector!r} is not a rule code (SD201), a prefix (SD2) or ALL")
    found = {c for c in BY_CODE if c.startswith(sel) and _family_prefix_ok(c, sel)}
    if not found:
        raise ValueError(f"no rule matches {selector!r} (known: {', '.join(BY_CODE)})")
    return found


def _family_prefix_ok(code: str, sel: str) -> bool:
    """``SD1`` is F1 (``SD1xx``), not F10 (``SD10xx``); ``SD10`` is F10, not ``SD101``."""
    if sel == "SD1":
        return len(code) == 5
    if sel == "SD10":
        return len(code) == 6
    return True
