"""CompVis `ldm/models/diffusion/ddpm.py` with JoePenna's Dreambooth-Stable-Diffusion fix
(PR #126, commit 9e385b4, "force logvar indexer to cpu"), reduced: the CPU table `self.logvar` is
indexed with a CPU copy of the timesteps, `self.logvar[t.cpu()]`, and the result is moved.

Upstream: https://github.com/JoePenna/Dreambooth-Stable-Diffusion/pull/126 (from the
suggestion in https://github.com/JoePenna/Dreambooth-Stable-Diffusion/issues/96).
"""

from functools import partial

import numpy as np
import torch
from torch import nn


def extract_into_tensor(a, t, x_shape):
    b, *_ = t.shape
    out = a.gather(-1, t)
    return out.reshape(b, *((1,) * (len(x_shape) - 1)))


class LatentDiffusion(nn.Module):
    """ldm.models.diffusion.ddpm.DDPM/LatentDiffusion, shrunk: eps-parameterization, l2 loss."""

    def __init__(self, timesteps=10, linear_start=1e-4, linear_end=2e-2, logvar_init=0.):
        super().__init__()
        self.model = nn.Conv2d(4 + 4, 4, 3, padding=1)  # DiffusionWrapper(unet_config, conditioning_key)
        self.l_simple_weight = 1.
        self.original_elbo_weight = 0.
        self.register_schedule(timesteps=timesteps, linear_start=linear_start, linear_end=linear_end)
        self.learn_logvar = False
        self.logvar = torch.full(fill_value=logvar_init, size=(self.num_timesteps,))
        if self.learn_logvar:
            self.logvar = nn.Parameter(self.logvar, requires_grad=True)

    @property
    def device(self):  # LightningModule.device
        return next(self.parameters()).device

    def register_schedule(self, timesteps, linear_start, linear_end):
        betas = (np.linspace(linear_start ** 0.5, linear_end ** 0.5, timesteps, dtype=np.float64) ** 2)
        alphas = 1. - betas
        alphas_cumprod = np.cumprod(alphas, axis=0)
        self.num_timesteps = int(timesteps)
        to_torch = partial(torch.tensor, dtype=torch.float32)
        self.register_buffer('sqrt_alphas_cumprod', to_torch(np.sqrt(alphas_cumprod)))
        self.register_buffer('sqrt_one_minus_alphas_cumprod', to_torch(np.sqrt(1. - alphas_cumprod)))
        self.register_buffer('lvlb_weights', to_torch(betas), persistent=False)

    def q_sample(self, x_start, t, noise):
        return (extract_into_tensor(self.sqrt_alphas_cumprod, t, x_start.shape) * x_start +
                extract_into_tensor(self.sqrt_one_minus_alphas_cumprod, t, x_start.shape) * noise)

    def apply_model(self, x_noisy, t, cond):
        return self.model(torch.cat([x_noisy, cond], dim=1))  # conditioning_key 'concat'

    def forward(self, x, c):
        t = torch.randint(0, self.num_timesteps, (x.shape[0],), device=self.device).long()
        return self.p_losses(x, c, t)

    def p_losses(self, x_start, cond, t):
        noise = torch.randn_like(x_start)
        x_noisy = self.q_sample(x_start=x_start, t=t, noise=noise)
        model_output = self.apply_model(x_noisy, t, cond)
        target = noise  # self.parameterization == "eps"

        loss_simple = nn.functional.mse_loss(target, model_output, reduction='none').mean([1, 2, 3])

        logvar_t = self.logvar[t.cpu()].to(self.device)
        loss = loss_simple / torch.exp(logvar_t) + logvar_t
        loss = self.l_simple_weight * loss.mean()

        loss_vlb = nn.functional.mse_loss(target, model_output, reduction='none').mean(dim=(1, 2, 3))
        loss_vlb = (self.lvlb_weights[t] * loss_vlb).mean()
        loss += (self.original_elbo_weight * loss_vlb)
        return loss


torch.manual_seed(0)
model = LatentDiffusion().to("cuda")  # trainer.fit(model, data) on one GPU
optimizer = torch.optim.AdamW(model.model.parameters(), lr=1e-6)

x = torch.randn(2, 4, 8, 8, device="cuda")  # self.get_input(batch, ...): the first-stage latents
c = torch.randn(2, 4, 8, 8, device="cuda")
loss = model(x, c)  # shared_step -> self(x, c)
loss.backward()
optimizer.step()
print(f"train/loss {loss.item():.4f}")
