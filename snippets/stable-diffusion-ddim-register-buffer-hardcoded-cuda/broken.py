"""Stable Diffusion's DDIMSampler (ldm/models/diffusion/ddim.py), reduced: `register_buffer`
moves every schedule tensor to `torch.device("cuda")`, the *current* GPU (cuda:0), whatever GPU
the model is on. Easy Diffusion ran the model on the GPU the user picked (`cuda:1`); img2img's
`stochastic_encode` then gathers from `ddim_alphas` (on cuda:0) with timesteps on cuda:1.

Upstream: https://github.com/easydiffusion/easydiffusion/pull/561 (fix: commit 9b2d817,
`register_buffer` moves to `self.model.device`)
"""

import numpy as np
import torch
from torch import nn


def make_ddim_timesteps(num_ddim_timesteps, num_ddpm_timesteps):
    """ldm/modules/diffusionmodules/util.py ("uniform" discretization)."""
    c = num_ddpm_timesteps // num_ddim_timesteps
    return np.asarray(list(range(0, num_ddpm_timesteps, c))) + 1


def make_ddim_sampling_parameters(alphacums, ddim_timesteps, eta):
    alphas = alphacums[ddim_timesteps]
    alphas_prev = torch.cat([alphacums[:1], alphacums[ddim_timesteps[:-1]]])  # np.asarray([...]) upstream
    sigmas = eta * torch.sqrt((1 - alphas_prev) / (1 - alphas) * (1 - alphas / alphas_prev))
    return sigmas, alphas, alphas_prev


def extract_into_tensor(a, t, x_shape):
    b, *_ = t.shape
    out = a.gather(-1, t)
    return out.reshape(b, *((1,) * (len(x_shape) - 1)))


class LatentDiffusion(nn.Module):
    """The schedule part of ldm.models.diffusion.ddpm.LatentDiffusion (buffers follow .to())."""

    def __init__(self, num_timesteps=1000):
        super().__init__()
        self.num_timesteps = num_timesteps
        betas = torch.linspace(0.00085**0.5, 0.0120**0.5, num_timesteps, dtype=torch.float64) ** 2
        self.register_buffer("betas", betas.float())
        self.register_buffer("alphas_cumprod", torch.cumprod(1.0 - betas, dim=0).float())
        self.proj = nn.Conv2d(4, 4, 1)

    @property
    def device(self):
        return self.betas.device


class DDIMSampler:
    def __init__(self, model, schedule="linear", **kwargs):
        super().__init__()
        self.model = model
        self.ddpm_num_timesteps = model.num_timesteps
        self.schedule = schedule

    def register_buffer(self, name, attr):
        if type(attr) == torch.Tensor:  # noqa: E721
            if attr.device != torch.device("cuda"):
                attr = attr.to(torch.device("cuda"))  # "cuda" is the current GPU, cuda:0
        setattr(self, name, attr)

    def make_schedule(self, ddim_num_steps, ddim_eta=0.0):
        self.ddim_timesteps = make_ddim_timesteps(ddim_num_steps, self.ddpm_num_timesteps)
        alphas_cumprod = self.model.alphas_cumprod
        to_torch = lambda x: x.clone().detach().to(torch.float32).to(self.model.device)  # noqa: E731
        self.register_buffer("alphas_cumprod", to_torch(alphas_cumprod))
        ddim_sigmas, ddim_alphas, ddim_alphas_prev = make_ddim_sampling_parameters(
            alphacums=alphas_cumprod.cpu(), ddim_timesteps=self.ddim_timesteps, eta=ddim_eta)
        self.register_buffer("ddim_sigmas", ddim_sigmas)
        self.register_buffer("ddim_alphas", ddim_alphas)
        self.register_buffer("ddim_alphas_prev", ddim_alphas_prev)
        self.register_buffer("ddim_sqrt_one_minus_alphas", torch.sqrt(1.0 - ddim_alphas))  # upstream: np.sqrt

    @torch.no_grad()
    def stochastic_encode(self, x0, t, use_original_steps=False, noise=None):
        # t serves as an index to gather the correct alphas
        sqrt_alphas_cumprod = torch.sqrt(self.ddim_alphas)
        sqrt_one_minus_alphas_cumprod = self.ddim_sqrt_one_minus_alphas
        if noise is None:
            noise = torch.randn_like(x0)
        return (extract_into_tensor(sqrt_alphas_cumprod, t, x0.shape) * x0 +
                extract_into_tensor(sqrt_one_minus_alphas_cumprod, t, x0.shape) * noise)


torch.manual_seed(0)
device = "cuda:1"  # Easy Diffusion's render device, chosen by the user
model = LatentDiffusion().to(device)

# ui/sd_internal/runtime.py, _img2img(init_latent, t_enc, batch_size, ...):
batch_size, t_enc, opt_ddim_steps = 2, 8, 10
init_latent = torch.randn(batch_size, 4, 8, 8, device=device)
sampler = DDIMSampler(model)
sampler.make_schedule(ddim_num_steps=opt_ddim_steps, ddim_eta=0.0)
z_enc = sampler.stochastic_encode(init_latent, torch.tensor([t_enc] * batch_size).to(device))
print(z_enc.device, z_enc.std().item() > 0)
