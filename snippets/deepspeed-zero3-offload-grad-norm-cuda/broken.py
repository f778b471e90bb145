"""DeepSpeed 0.14.1-0.14.2, reduced: ZeRO stage 3 with `offload_optimizer: {"device": "cpu"}` and
`gradient_clipping`. PR #5256 computed the global gradient norm with
`torch.norm(torch.stack(norm_groups))`, a tensor on the GPU; when the norm exceeds the clip
value, `unscale_and_clip_grads` multiplies the fp32 gradients, which live on the CPU, by a
scale on the GPU.

Upstream: https://github.com/deepspeedai/DeepSpeed/issues/5538 (regression of
https://github.com/deepspeedai/DeepSpeed/pull/5256, reverted by
https://github.com/deepspeedai/DeepSpeed/pull/5461, released in 0.14.3).
"""

import torch
from torch import nn

torch.manual_seed(0)


class DeepSpeedZeroOptimizer_Stage3:
    """deepspeed/runtime/zero/stage3.py, 0.14.2, reduced to one process and one sub group: the
    model's parameters and gradients stay on the GPU, their fp32 master copy (and its gradient)
    is offloaded to the CPU, where the optimizer (DeepSpeedCPUAdam) steps."""

    def __init__(self, module, lr, clip_grad, loss_scale=1.0):
        self.device = "cuda"  # get_accelerator().current_device_name()
        self.clip_grad = clip_grad
        self.loss_scale = loss_scale  # bf16: no loss scaling
        self.fp16_groups = [list(module.parameters())]
        # offload_optimizer device "cpu": the flat fp32 partition of each sub group lives on the CPU
        self.fp32_partitioned_groups_flat = [
            torch.cat([p.detach().reshape(-1) for p in group]).float().cpu().requires_grad_()
            for group in self.fp16_groups
        ]
        for flat in self.fp32_partitioned_groups_flat:
            flat.grad = torch.zeros_like(flat)
        self.optimizer = torch.optim.AdamW(self.fp32_partitioned_groups_flat, lr=lr)
        self.norm_for_param_grads = {}

    def partition_grads(self):
        """With offload_optimizer: each gradient's norm is taken on the GPU, then the gradient is
        copied into the CPU fp32 buffer."""
        for i, group in enumerate(self.fp16_groups):
            dest_offset = 0
            for param in group:
                grad_buffer = param.grad.reshape(-1)
                self.norm_for_param_grads[id(param)] = grad_buffer.double().norm(2)  # _constant_buffered_norm2
                fp32_grad_tensor = self.fp32_partitioned_groups_flat[i].grad.narrow(0, dest_offset, grad_buffer.numel())
                fp32_grad_tensor.copy_(grad_buffer)
                dest_offset += grad_buffer.numel()

    def complete_grad_norm_calculation_for_cpu_offload(self, params):
        total_norm = 0.0
        norm_type = 2.0
        for p in params:
            total_norm += self.norm_for_param_grads[id(p)] ** 2
        # Sum across all model parallel GPUs (dist.all_reduce; one process here)
        total_norm_cuda = torch.tensor([float(total_norm)], device=self.device)
        total_norm = total_norm_cuda[0] ** (1.0 / norm_type)

        inf_or_nan = total_norm.isnan().logical_or(total_norm.isinf())
        err = torch.tensor(-1.0, device=self.device, dtype=torch.float)
        total_norm = inf_or_nan * err + inf_or_nan.logical_not() * total_norm
        return total_norm

    def _get_norm_groups(self):
        return [self.complete_grad_norm_calculation_for_cpu_offload(group) for group in self.fp16_groups]

    def step(self):
        norm_groups = self._get_norm_groups()
        scaled_global_grad_norm = torch.norm(torch.stack(norm_groups))  # PR #5256 (0.14.1)

        # Stash unscaled gradient norm
        self._global_grad_norm = scaled_global_grad_norm / self.loss_scale

        for sub_group_id, group in enumerate(self.fp16_groups):
            # scale the fp32 gradients
            self.unscale_and_clip_grads(sub_group_id, scaled_global_grad_norm)
            # apply the optimizer step on the sub group and copy fp32 parameters to fp16
            self.optimizer.step()
            with torch.no_grad():
                flat = self.fp32_partitioned_groups_flat[sub_group_id]
                torch.nn.utils.vector_to_parameters(flat.to(self.device), group)
            for param in group:
                param.grad = None

    def unscale_and_clip_grads(self, sub_group_id, total_norm):
        # compute combined scale factor for this group
        combined_scale = self.loss_scale
        if self.clip_grad > 0.0:
            # norm is in fact norm*scale
            clip = ((total_norm / self.loss_scale) + 1e-6) / self.clip_grad
            if clip > 1:
                combined_scale = clip * self.loss_scale

        self.fp32_partitioned_groups_flat[sub_group_id].grad.mul_(1.0 / combined_scale)


model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1)).cuda()
# ds_config: zero_optimization.stage 3, offload_optimizer.device "cpu", gradient_clipping 1.0
optimizer = DeepSpeedZeroOptimizer_Stage3(model, lr=1e-2, clip_grad=1.0)

x = torch.randn(64, 8).cuda()
y = (3 * x.sum(dim=1, keepdim=True) + 2).cuda()
losses = []
for _ in range(3):
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()  # engine.backward
    optimizer.partition_grads()
    optimizer.step()  # engine.step
    losses.append(round(loss.item(), 4))
print(losses)
