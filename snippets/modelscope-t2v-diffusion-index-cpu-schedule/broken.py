"""ModelScope 1.4.0/1.4.1 text-to-video-synthesis, reduced: `GaussianDiffusion` keeps its noise
schedule as plain float64 CPU tensors, and the DDIM sampler reads it through
`_i(tensor, t, x)`, which indexes the table with the timesteps `t` (created on the GPU next to
the latents) and only then moves the result with `.to(x)`. From PyTorch 1.13 on, a CPU tensor
can no longer be indexed with CUDA indices.

Upstream: https://github.com/modelscope/modelscope/issues/220 (and #210), fixed by commit
https://github.com/modelscope/modelscope/commit/fe673953b1f8cfe2a2f1ed2ef7c3207fefc28f43
(#207: `tensor = tensor.to(x.device)` first).
"""

import torch
import torch.nn as nn


def _i(tensor, t, x):
    r"""Index tensor using t and format the output according to x.
    """
    shape = (x.size(0), ) + (1, ) * (x.ndim - 1)
    return tensor[t].view(shape).to(x)


def beta_schedule(schedule, num_timesteps=1000, init_beta=None, last_beta=None):
    if schedule == 'linear_sd':
        return torch.linspace(
            init_beta**0.5, last_beta**0.5, num_timesteps, dtype=torch.float64)**2
    else:
        raise ValueError(f'Unsupported schedule: {schedule}')


class GaussianDiffusion:
    """modelscope/models/multi_modal/video_synthesis/diffusion.py: DDIM sampling with
    classifier-free guidance, mean_type='eps', var_type='fixed_small'."""

    def __init__(self, betas, mean_type='eps', var_type='fixed_small'):
        self.betas = betas
        self.num_timesteps = len(betas)
        self.mean_type = mean_type
        self.var_type = var_type

        alphas = 1 - self.betas
        self.alphas_cumprod = torch.cumprod(alphas, dim=0)
        self.alphas_cumprod_prev = torch.cat(
            [alphas.new_ones([1]), self.alphas_cumprod[:-1]])
        self.sqrt_recip_alphas_cumprod = torch.sqrt(1.0 / self.alphas_cumprod)
        self.sqrt_recipm1_alphas_cumprod = torch.sqrt(1.0 / self.alphas_cumprod - 1)
        self.posterior_variance = betas * (1.0 - self.alphas_cumprod_prev) / (
            1.0 - self.alphas_cumprod)
        self.posterior_log_variance_clipped = torch.log(
            self.posterior_variance.clamp(1e-20))

    def p_mean_variance(self, xt, t, model, model_kwargs, guide_scale=None):
        # classifier-free guidance
        y_out = model(xt, t, **model_kwargs[0])
        u_out = model(xt, t, **model_kwargs[1])
        dim = y_out.size(1)
        out = u_out[:, :dim] + guide_scale * (y_out[:, :dim] - u_out[:, :dim])

        # compute variance
        if self.var_type == 'fixed_small':
            var = _i(self.posterior_variance, t, xt)
            log_var = _i(self.posterior_log_variance_clipped, t, xt)

        # compute mean and x0
        x0 = _i(self.sqrt_recip_alphas_cumprod, t, xt) * xt - _i(
            self.sqrt_recipm1_alphas_cumprod, t, xt) * out
        return None, var, log_var, x0

    @torch.no_grad()
    def ddim_sample(self, xt, t, model, model_kwargs, guide_scale=None,
                    ddim_timesteps=20, eta=0.0):
        stride = self.num_timesteps // ddim_timesteps
        _, _, _, x0 = self.p_mean_variance(xt, t, model, model_kwargs, guide_scale)
        eps = (_i(self.sqrt_recip_alphas_cumprod, t, xt) * xt - x0) / _i(
            self.sqrt_recipm1_alphas_cumprod, t, xt)
        alphas = _i(self.alphas_cumprod, t, xt)
        alphas_prev = _i(self.alphas_cumprod, (t - stride).clamp(0), xt)
        a = (1 - alphas_prev) / (1 - alphas)
        b = (1 - alphas / alphas_prev)
        sigmas = eta * torch.sqrt(a * b)

        noise = torch.randn_like(xt)
        direction = torch.sqrt(1 - alphas_prev - sigmas**2) * eps
        mask = t.ne(0).float().view(-1, *((1, ) * (xt.ndim - 1)))
        xt_1 = torch.sqrt(alphas_prev) * x0 + direction + mask * sigmas * noise
        return xt_1, x0

    @torch.no_grad()
    def ddim_sample_loop(self, noise, model, model_kwargs, guide_scale=None,
                         ddim_timesteps=20, eta=0.0):
        b = noise.size(0)
        xt = noise
        steps = (1 + torch.arange(0, self.num_timesteps,
                                  self.num_timesteps // ddim_timesteps)).clamp(
                                      0, self.num_timesteps - 1).flip(0)
        for step in steps:
            t = torch.full((b, ), step, dtype=torch.long, device=xt.device)
            xt, _ = self.ddim_sample(xt, t, model, model_kwargs, guide_scale,
                                     ddim_timesteps, eta)
        return xt


class UNetSD(nn.Module):
    """A stand-in for the video UNet: noise prediction from (x, t, y)."""

    def __init__(self, in_dim=4, y_dim=8, dim=16):
        super().__init__()
        self.time_embed = nn.Sequential(nn.Linear(1, dim), nn.SiLU())
        self.context = nn.Linear(y_dim, dim)
        self.conv_in = nn.Conv3d(in_dim, dim, 3, padding=1)
        self.conv_out = nn.Conv3d(dim, in_dim, 3, padding=1)

    def forward(self, x, t, y):
        e = self.time_embed(t.float().view(-1, 1) / 1000) + self.context(y).mean(1)
        h = torch.tanh(self.conv_in(x) + e.view(*e.shape, 1, 1, 1))
        return self.conv_out(h)


torch.manual_seed(0)
device = torch.device('cuda')  # TextToVideoSynthesis.__init__, when CUDA is available
sd_model = UNetSD().to(device)
sd_model.eval()
betas = beta_schedule('linear_sd', 1000, init_beta=0.00085, last_beta=0.0120)
diffusion = GaussianDiffusion(betas=betas, mean_type='eps', var_type='fixed_small')

# TextToVideoSynthesis.forward: text embeddings in, video latents out
context = torch.randn(2, 3, 8).to(device)  # torch.cat([zero_y, y], dim=0).to(self.device)
x0 = diffusion.ddim_sample_loop(
    noise=torch.randn(1, 4, 2, 8, 8).to(device),  # shape: b c f h w
    model=sd_model,
    model_kwargs=[{'y': context[1].unsqueeze(0)}, {'y': context[0].unsqueeze(0)}],
    guide_scale=9.0,
    ddim_timesteps=5,
    eta=0.0)
print("video latents", tuple(x0.shape), f"mean |x0| = {x0.abs().mean().item():.4f}")
