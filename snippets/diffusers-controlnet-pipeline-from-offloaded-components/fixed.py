"""diffusers 0.28, reduced: the same two pipelines sharing components; the ControlNet pipeline
calls `enable_model_cpu_offload()` itself, which since 0.28 first removes the hooks the shared
components already carry (`remove_all_hooks`, PR #7448), then hooks every model of the new
pipeline, the ControlNet included.

Upstream: the maintainer's answer in https://github.com/huggingface/diffusers/issues/7891;
https://github.com/huggingface/diffusers/pull/7448 (0.28.0) makes the second call safe.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


# ---- accelerate/hooks.py, reduced ------------------------------------------------------------
def send_to_device(obj, device):
    if isinstance(obj, torch.Tensor):
        return obj.to(device)
    if isinstance(obj, (list, tuple)):
        return type(obj)(send_to_device(o, device) for o in obj)
    if isinstance(obj, dict):
        return {k: send_to_device(v, device) for k, v in obj.items()}
    return obj


class CpuOffload:
    """Offloads a model on the CPU until its forward pass is called; moves the inputs to the
    execution device."""

    def __init__(self, execution_device=None, prev_module_hook=None):
        self.prev_module_hook = prev_module_hook
        self.execution_device = execution_device

    def init_hook(self, module):
        return module.to("cpu")

    def pre_forward(self, module, args, kwargs):
        if self.prev_module_hook is not None:
            self.prev_module_hook.offload()
        module.to(self.execution_device)
        return send_to_device(args, self.execution_device), send_to_device(kwargs, self.execution_device)


def add_hook_to_module(module, hook):
    module._hf_hook = hook
    module._hf_hook_handle = module.register_forward_pre_hook(hook.pre_forward, with_kwargs=True)
    return hook.init_hook(module)


def remove_hook_from_module(module):
    if hasattr(module, "_hf_hook"):
        module._hf_hook_handle.remove()
        del module._hf_hook, module._hf_hook_handle
    return module


class UserCpuOffloadHook:
    def __init__(self, model, hook):
        self.model, self.hook = model, hook

    def offload(self):
        self.hook.init_hook(self.model)

    def remove(self):
        remove_hook_from_module(self.model)


def cpu_offload_with_hook(model, execution_device=None, prev_module_hook=None):
    hook = CpuOffload(execution_device=execution_device, prev_module_hook=prev_module_hook)
    add_hook_to_module(model, hook)
    return model, UserCpuOffloadHook(model, hook)


# ---- diffusers/pipelines/pipeline_utils.py, 0.28, reduced ---------------------------------------
class DiffusionPipeline:
    model_cpu_offload_seq = None
    _exclude_from_cpu_offload = ()

    def register_modules(self, **kwargs):
        self._components = dict(kwargs)
        for name, module in kwargs.items():
            setattr(self, name, module)

    @property
    def components(self):
        return dict(self._components)

    @property
    def device(self):
        for module in self.components.values():
            if isinstance(module, nn.Module):
                return next(module.parameters()).device
        return torch.device("cpu")

    @property
    def _execution_device(self):
        for name, model in self.components.items():
            if not isinstance(model, nn.Module) or name in self._exclude_from_cpu_offload:
                continue
            if not hasattr(model, "_hf_hook"):
                return self.device
            for module in model.modules():
                if getattr(getattr(module, "_hf_hook", None), "execution_device", None) is not None:
                    return torch.device(module._hf_hook.execution_device)
        return self.device

    def remove_all_hooks(self):
        """Removes all hooks that were added when using `enable_model_cpu_offload` (0.28, PR #7448)."""
        for _, model in self.components.items():
            if isinstance(model, nn.Module) and hasattr(model, "_hf_hook"):
                remove_hook_from_module(model)
        self._all_hooks = []

    def enable_model_cpu_offload(self, gpu_id=0):
        self.remove_all_hooks()
        device = torch.device(f"cuda:{gpu_id}")
        all_model_components = {k: v for k, v in self.components.items() if isinstance(v, nn.Module)}
        self._all_hooks = []
        hook = None
        for model_str in self.model_cpu_offload_seq.split("->"):
            model = all_model_components.pop(model_str, None)
            if not isinstance(model, nn.Module):
                continue
            _, hook = cpu_offload_with_hook(model, device, prev_module_hook=hook)
            self._all_hooks.append(hook)
        # models that are not in the seq chain (controlnet) are offloaded too
        for name, model in all_model_components.items():
            _, hook = cpu_offload_with_hook(model, device)
            self._all_hooks.append(hook)

    def maybe_free_model_hooks(self):
        for hook in getattr(self, "_all_hooks", []):
            hook.offload()


# ---- the models, shrunk -----------------------------------------------------------------------
def get_timestep_embedding(timesteps, embedding_dim):
    half_dim = embedding_dim // 2
    exponent = -math.log(10000) * torch.arange(half_dim, dtype=torch.float32, device=timesteps.device) / half_dim
    emb = timesteps[:, None].float() * torch.exp(exponent)[None, :]
    return torch.cat([torch.sin(emb), torch.cos(emb)], dim=-1)


class TimestepEmbedding(nn.Module):
    def __init__(self, in_channels, time_embed_dim):
        super().__init__()
        self.linear_1 = nn.Linear(in_channels, time_embed_dim)
        self.linear_2 = nn.Linear(time_embed_dim, time_embed_dim)

    def forward(self, sample):
        return self.linear_2(F.silu(self.linear_1(sample)))


class CLIPTextModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.embeddings = nn.Embedding(100, 16)
        self.final_layer_norm = nn.LayerNorm(16)

    def forward(self, input_ids):
        return self.final_layer_norm(self.embeddings(input_ids))


class UNet2DConditionModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.time_embedding = TimestepEmbedding(8, 8)
        self.conv_in = nn.Conv2d(4, 8, 3, padding=1)
        self.encoder_proj = nn.Linear(16, 8)
        self.conv_out = nn.Conv2d(8, 4, 3, padding=1)

    def forward(self, sample, timestep, encoder_hidden_states, down_block_additional_residuals=None):
        emb = self.time_embedding(get_timestep_embedding(timestep.expand(sample.shape[0]), 8))
        h = self.conv_in(sample) + emb[:, :, None, None]
        h = h + self.encoder_proj(encoder_hidden_states.mean(dim=1))[:, :, None, None]
        if down_block_additional_residuals is not None:
            h = h + down_block_additional_residuals[0]
        return self.conv_out(F.silu(h))


class ControlNetModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.time_embedding = TimestepEmbedding(8, 8)
        self.conv_in = nn.Conv2d(4, 8, 3, padding=1)
        self.controlnet_cond_embedding = nn.Conv2d(3, 8, 3, padding=1)
        self.controlnet_down_blocks = nn.ModuleList([nn.Conv2d(8, 8, 1)])

    def forward(self, sample, timestep, encoder_hidden_states, controlnet_cond, conditioning_scale=1.0):
        t_emb = get_timestep_embedding(timestep.expand(sample.shape[0]), 8)
        emb = self.time_embedding(t_emb)
        sample = self.conv_in(sample) + emb[:, :, None, None]
        sample = sample + self.controlnet_cond_embedding(controlnet_cond)
        down_block_res_samples = [block(sample) * conditioning_scale for block in self.controlnet_down_blocks]
        return down_block_res_samples


class AutoencoderKL(nn.Module):
    def __init__(self):
        super().__init__()
        self.decoder = nn.Conv2d(4, 3, 3, padding=1)

    def decode(self, z):
        return self.decoder(z)

    def forward(self, z):
        return self.decode(z)


# ---- the pipelines, shrunk (one text encoder, a two-step Euler loop) --------------------------
class StableDiffusionXLPipeline(DiffusionPipeline):
    model_cpu_offload_seq = "text_encoder->unet->vae"

    def __init__(self, vae, text_encoder, unet, scheduler_timesteps):
        self.register_modules(vae=vae, text_encoder=text_encoder, unet=unet, scheduler_timesteps=scheduler_timesteps)

    @torch.no_grad()
    def __call__(self, prompt_ids, generator):
        device = self._execution_device
        prompt_embeds = self.text_encoder(prompt_ids.to(device))
        latents = torch.randn(1, 4, 8, 8, generator=generator).to(device)
        for t in self.scheduler_timesteps.to(device):
            noise_pred = self.unet(latents, t, encoder_hidden_states=prompt_embeds)
            latents = latents - 0.1 * noise_pred
        image = self.vae(latents)
        self.maybe_free_model_hooks()
        return image


class StableDiffusionXLControlNetPipeline(DiffusionPipeline):
    model_cpu_offload_seq = "text_encoder->unet->vae"  # leave controlnet out on purpose: it iterates with unet

    def __init__(self, vae, text_encoder, unet, controlnet, scheduler_timesteps):
        self.register_modules(
            vae=vae, text_encoder=text_encoder, unet=unet, controlnet=controlnet, scheduler_timesteps=scheduler_timesteps
        )

    @torch.no_grad()
    def __call__(self, prompt_ids, image, generator):
        device = self._execution_device
        prompt_embeds = self.text_encoder(prompt_ids.to(device))
        image = image.to(device)  # prepare_image(..., device=device)
        latents = torch.randn(1, 4, 8, 8, generator=generator).to(device)
        for t in self.scheduler_timesteps.to(device):
            down_block_res_samples = self.controlnet(latents, t, encoder_hidden_states=prompt_embeds, controlnet_cond=image)
            noise_pred = self.unet(
                latents, t, encoder_hidden_states=prompt_embeds, down_block_additional_residuals=down_block_res_samples
            )
            latents = latents - 0.1 * noise_pred
        image = self.vae(latents)
        self.maybe_free_model_hooks()
        return image


pipeline = StableDiffusionXLPipeline(
    vae=AutoencoderKL(), text_encoder=CLIPTextModel(), unet=UNet2DConditionModel(), scheduler_timesteps=torch.tensor([999, 499])
)
pipeline.enable_model_cpu_offload()
prompt_ids = torch.randint(0, 100, (1, 7))
image = pipeline(prompt_ids, generator=torch.Generator().manual_seed(1))

controlnet = ControlNetModel()  # ControlNetModel.from_pretrained(...)
pipeline_controlnet = StableDiffusionXLControlNetPipeline(controlnet=controlnet, **pipeline.components)
pipeline_controlnet.enable_model_cpu_offload()  # every new pipeline gets its own hooks
control_image = torch.rand(1, 3, 8, 8)
image_controlnet = pipeline_controlnet(prompt_ids, image=control_image, generator=torch.Generator().manual_seed(1))
print(image_controlnet.shape, round(image_controlnet.mean().item(), 4), round(image_controlnet.std().item(), 4))
