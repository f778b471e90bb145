"""diffusers UniPCMultistepScheduler on `main` between #13356 (2026-04-03) and #13489
(2026-04-30), reduced: the scheduler keeps `self.sigmas` on the CPU on purpose, so the step
ratio `rk` derived from them is a CPU 0-dim tensor. Elementwise ops accept that as a scalar;
`torch.stack(rks)`, which #13356 put in place of `torch.tensor(rks, device=device)`, does not.

Upstream: https://github.com/huggingface/diffusers/issues/13488 (fixed by PR #13489).
"""

import torch


class UniPCMultistepScheduler:
    """src/diffusers/schedulers/scheduling_unipc_multistep.py at b114620d85, reduced to the
    data-prediction (predict_x0), bh2 predictor step."""

    def __init__(self, num_inference_steps=6, solver_order=2):
        self.solver_order = solver_order
        self.predict_x0 = True
        self.model_outputs = [None] * solver_order
        self.step_index = None
        self.set_timesteps(num_inference_steps)

    def set_timesteps(self, num_inference_steps):
        self.sigmas = torch.linspace(14.6, 0.03, num_inference_steps + 1)
        self.sigmas = self.sigmas.to("cpu")  # to avoid too much CPU/GPU communication

    def _sigma_to_alpha_sigma_t(self, sigma):
        alpha_t = 1 / ((sigma**2 + 1) ** 0.5)
        sigma_t = sigma * alpha_t
        return alpha_t, sigma_t

    def multistep_uni_p_bh_update(self, model_output, sample, order):
        model_output_list = self.model_outputs
        m0 = model_output_list[-1]
        x = sample

        sigma_t, sigma_s0 = self.sigmas[self.step_index + 1], self.sigmas[self.step_index]
        alpha_t, sigma_t = self._sigma_to_alpha_sigma_t(sigma_t)
        alpha_s0, sigma_s0 = self._sigma_to_alpha_sigma_t(sigma_s0)
        lambda_t = torch.log(alpha_t) - torch.log(sigma_t)
        lambda_s0 = torch.log(alpha_s0) - torch.log(sigma_s0)
        h = lambda_t - lambda_s0  # a CPU 0-dim tensor

        device = sample.device
        rks = []
        D1s = []
        for i in range(1, order):
            si = self.step_index - i
            mi = model_output_list[-(i + 1)]
            alpha_si, sigma_si = self._sigma_to_alpha_sigma_t(self.sigmas[si])
            lambda_si = torch.log(alpha_si) - torch.log(sigma_si)
            rk = (lambda_si - lambda_s0) / h  # CPU 0-dim
            rks.append(rk)
            D1s.append((mi - m0) / rk)  # fine: a 0-dim CPU tensor acts as a scalar

        rks.append(torch.ones((), device=device))
        rks = torch.stack(rks)  # a CPU and a CUDA tensor in one stack

        R = []
        b = []
        hh = -h if self.predict_x0 else h
        h_phi_1 = torch.expm1(hh)  # h\phi_1(h) = e^h - 1
        h_phi_k = h_phi_1 / hh - 1
        factorial_i = 1
        B_h = torch.expm1(hh)  # solver_type == "bh2"
        for i in range(1, order + 1):
            R.append(torch.pow(rks, i - 1))
            b.append(h_phi_k * factorial_i / B_h)
            factorial_i *= i + 1
            h_phi_k = h_phi_k / hh - 1 / factorial_i

        D1s = torch.stack(D1s, dim=1)  # (B, K)
        rhos_p = torch.tensor([0.5], dtype=x.dtype, device=device)  # order == 2
        x_t_ = sigma_t / sigma_s0 * x - alpha_t * h_phi_1 * m0
        pred_res = torch.einsum("k,bkc...->bc...", rhos_p, D1s)
        x_t = x_t_ - alpha_t * B_h * pred_res
        return x_t.to(x.dtype)


torch.manual_seed(0)
device = "cuda"
scheduler = UniPCMultistepScheduler(num_inference_steps=6, solver_order=2)

sample = torch.randn(1, 4, 8, 8, device=device)  # the latents
# two steps' model outputs (converted to x0 predictions); the second step is the first of order 2
scheduler.model_outputs = [torch.randn(1, 4, 8, 8, device=device) for _ in range(2)]
scheduler.step_index = 1
prev_sample = scheduler.multistep_uni_p_bh_update(scheduler.model_outputs[-1], sample, order=2)
print(prev_sample.abs().sum())
