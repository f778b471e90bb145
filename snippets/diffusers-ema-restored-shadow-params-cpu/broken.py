"""diffusers `examples/text_to_image/train_text_to_image.py` (2023-02-07 to 2023-02-16), reduced:
the EMA of the UNet is moved to the GPU after `accelerator.prepare`, but `--resume_from_checkpoint`
then runs the load hook, which replaces its shadow parameters with the CPU tensors of
`EMAModel.from_pretrained`. The next `ema_unet.step(...)` mixes CPU and CUDA tensors.

Upstream: https://github.com/huggingface/diffusers/pull/2382 ("[Examples] Make sure EMA works with
any device", the fix); the hook came with PR #2048.
"""

import os
import tempfile

import torch
from torch import nn

torch.manual_seed(0)


class UNet2DConditionModel(nn.Module):
    """A stand-in with diffusers' save_pretrained / from_pretrained (which loads on the CPU)."""

    def __init__(self, **config):
        super().__init__()
        self.config = config
        self.conv = nn.Conv2d(4, 4, 3, padding=1)

    def forward(self, sample):
        return self.conv(sample)

    def save_pretrained(self, path):
        os.makedirs(path, exist_ok=True)
        torch.save({"config": self.config, "state_dict": self.state_dict()}, os.path.join(path, "model.bin"))

    @classmethod
    def from_pretrained(cls, path):
        saved = torch.load(os.path.join(path, "model.bin"), map_location="cpu")
        model = cls(**saved["config"])
        model.load_state_dict(saved["state_dict"])
        return model


class EMAModel:
    """diffusers/training_utils.py (v0.13.0.dev0), reduced."""

    def __init__(self, parameters, decay=0.9999, model_cls=None, model_config=None):
        self.shadow_params = [p.clone().detach() for p in parameters]
        self.decay, self.optimization_step = decay, 0
        self.model_cls, self.model_config = model_cls, model_config

    @classmethod
    def from_pretrained(cls, path, model_cls):
        model = model_cls.from_pretrained(path)  # on the CPU
        ema_model = cls(model.parameters(), model_cls=model_cls, model_config=model.config)
        ema_model.optimization_step = model.config["optimization_step"]
        return ema_model

    def save_pretrained(self, path):
        model = self.model_cls(**self.model_config, optimization_step=self.optimization_step)
        self.copy_to(model.parameters())
        model.save_pretrained(path)

    @torch.no_grad()
    def step(self, parameters):
        self.optimization_step += 1
        step = max(0, self.optimization_step - 1)
        one_minus_decay = 1 - min(self.decay, (1 + step) / (10 + step))
        for s_param, param in zip(self.shadow_params, parameters, strict=True):
            s_param.sub_(one_minus_decay * (s_param - param))

    def copy_to(self, parameters):
        for s_param, param in zip(self.shadow_params, parameters, strict=True):
            param.data.copy_(s_param.to(param.device).data)

    def to(self, device=None):
        self.shadow_params = [p.to(device=device) for p in self.shadow_params]

    def state_dict(self):
        return {"decay": self.decay, "optimization_step": self.optimization_step,
                "shadow_params": self.shadow_params}

    def load_state_dict(self, state_dict):
        self.decay = state_dict.get("decay", self.decay)
        self.optimization_step = state_dict.get("optimization_step", self.optimization_step)
        shadow_params = state_dict.get("shadow_params", None)
        if shadow_params is not None:
            self.shadow_params = shadow_params  # taken as they are: no device cast


device = torch.device("cuda")  # accelerator.device
output_dir = tempfile.mkdtemp(prefix="sd-model-finetuned-")

unet = UNet2DConditionModel()  # UNet2DConditionModel.from_pretrained(args.pretrained_model_name_or_path, ...)
# Create EMA for the unet.
ema_unet = UNet2DConditionModel()
ema_unet.load_state_dict(unet.state_dict())
ema_unet = EMAModel(ema_unet.parameters(), model_cls=UNet2DConditionModel, model_config=ema_unet.config)


def save_model_hook(models, weights, output_dir):  # accelerator.register_save_state_pre_hook
    ema_unet.save_pretrained(os.path.join(output_dir, "unet_ema"))


def load_model_hook(models, input_dir):  # accelerator.register_load_state_pre_hook
    load_model = EMAModel.from_pretrained(os.path.join(input_dir, "unet_ema"), UNet2DConditionModel)
    ema_unet.load_state_dict(load_model.state_dict())
    del load_model


optimizer = torch.optim.AdamW(unet.parameters(), lr=1e-4)
unet = unet.to(device)  # accelerator.prepare(unet, optimizer, train_dataloader, lr_scheduler)
ema_unet.to(device)  # if args.use_ema: ema_unet.to(accelerator.device)

# A previous run saved checkpoint-500 (accelerator.save_state); this run resumes from it.
save_model_hook([unet], [], os.path.join(output_dir, "checkpoint-500"))
load_model_hook([unet], os.path.join(output_dir, "checkpoint-500"))  # accelerator.load_state(...)

# the training loop
model_pred = unet(torch.randn(2, 4, 8, 8, device=device))
loss = model_pred.pow(2).mean()
loss.backward()
optimizer.step()
optimizer.zero_grad()
ema_unet.step(unet.parameters())  # if accelerator.sync_gradients and args.use_ema
print(loss.item())
