"""diffusers 0.32.x `LTXPipeline.__call__`, reduced: the latents are drawn with `randn_tensor`,
which accepts a CPU generator, but the decode step of the timestep-conditioned VAE (LTX-Video
0.9.1) draws its noise with `torch.randn(..., generator=generator, device=device)`, and a CUDA
sampling kernel refuses a CPU generator.

Upstream: https://github.com/huggingface/diffusers/pull/10535 ("Use `randn_tensor` to replace
`torch.randn`", diffusers 0.33.0); the line came with PR #10330 (LTX Video 0.9.1).
"""

from types import SimpleNamespace

import torch
from torch import nn


def randn_tensor(shape, generator=None, device=None, dtype=None):
    """diffusers.utils.torch_utils.randn_tensor: a CPU generator samples on the CPU, then moves."""
    rand_device = device
    if generator is not None:
        gen_device_type = generator.device.type
        if gen_device_type != device.type and gen_device_type == "cpu":
            rand_device = "cpu"
        elif gen_device_type != device.type and gen_device_type == "cuda":
            raise ValueError(f"Cannot generate a {device} tensor from a generator of type {gen_device_type}.")
    return torch.randn(shape, generator=generator, device=rand_device, dtype=dtype).to(device)


class AutoencoderKLLTXVideo(nn.Module):
    """A stand-in for the LTX-Video 0.9.1 VAE: its decoder takes a timestep."""

    def __init__(self, latent_channels=8):
        super().__init__()
        self.config = SimpleNamespace(timestep_conditioning=True)
        self.conv_out = nn.Conv3d(latent_channels, 3, kernel_size=1)

    def decode(self, latents, timestep):
        return self.conv_out(latents * (1 + timestep[:, None, None, None, None]))


class LTXPipeline:
    """diffusers/pipelines/ltx/pipeline_ltx.py (0.32.x), shrunk: no text encoder, no scheduler."""

    def __init__(self, transformer, vae):
        self.transformer, self.vae = transformer, vae

    def to(self, device):
        self.transformer.to(device)
        self.vae.to(device)
        return self

    @property
    def _execution_device(self):
        return next(self.transformer.parameters()).device

    def prepare_latents(self, batch_size, num_channels_latents, num_frames, height, width, dtype, device, generator):
        shape = (batch_size, num_channels_latents, num_frames, height, width)
        return randn_tensor(shape, generator=generator, device=device, dtype=dtype)

    def __call__(self, num_frames=2, height=4, width=4, num_inference_steps=3,
                 decode_timestep=0.05, decode_noise_scale=0.025, generator=None):
        batch_size = 1
        device = self._execution_device
        # 4. Prepare latent variables
        latents = self.prepare_latents(batch_size, 8, num_frames, height, width, torch.float32, device, generator)
        # 7. Denoising loop
        for _ in range(num_inference_steps):
            noise_pred = self.transformer(latents)
            latents = latents - noise_pred / num_inference_steps  # self.scheduler.step(...)

        if not self.vae.config.timestep_conditioning:
            timestep = None
        else:
            noise = torch.randn(latents.shape, generator=generator, device=device, dtype=latents.dtype)
            if not isinstance(decode_timestep, list):
                decode_timestep = [decode_timestep] * batch_size
            if decode_noise_scale is None:
                decode_noise_scale = decode_timestep
            elif not isinstance(decode_noise_scale, list):
                decode_noise_scale = [decode_noise_scale] * batch_size
            timestep = torch.tensor(decode_timestep, device=device, dtype=latents.dtype)
            decode_noise_scale = torch.tensor(decode_noise_scale, device=device, dtype=latents.dtype)[
                :, None, None, None, None
            ]
            latents = (1 - decode_noise_scale) * latents + decode_noise_scale * noise
        return self.vae.decode(latents, timestep)


torch.manual_seed(0)
pipe = LTXPipeline(transformer=nn.Conv3d(8, 8, kernel_size=1), vae=AutoencoderKLLTXVideo())
pipe.to("cuda")

generator = torch.Generator().manual_seed(0)  # the reproducibility idiom: a CPU generator
video = pipe(generator=generator)
print(video.shape)
