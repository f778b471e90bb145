"""Upstream driver for peft-prompt-tuning-fsdp-cpu-offload-self-device: the real peft prompt
tuning of a real transformers causal LM, wrapped in the real ``torch.distributed.fsdp.
FullyShardedDataParallel`` with ``CPUOffload(offload_params=True)``, trained on "cuda".

huggingface/peft#352. In 0.3.0 ``PeftModelForCausalLM.forward`` builds the prefix attention
mask with ``.to(self.device)``: the device of the model's first registered parameter, which
under FSDP is a nested unit's flat parameter, offloaded to the CPU. ``torch.cat`` with the
batch's mask on the GPU fails. 0.4.0 takes the devices from the tensors it combines. One
process, one simulated GPU (a process group of one, ``backend="nccl"``); with a world size of
one FSDP uses ``NO_SHARD``, and parameter offload keeps each unit's flat parameter on the CPU
until that unit runs, as the sharded strategies do. The driver runs the forward passes of an
evaluation loop (``Trainer.evaluate``: ``eval()``, ``no_grad``), where 0.3.0 fails the same way
as in training (the failing line is in ``forward``).
Run by tests/upstream with one release on PYTHONPATH.
"""

from __future__ import annotations

import os

import torch
import torch.distributed as dist
from _report import imported, report


def main() -> None:
    # what torchrun / accelerate launch set for a single process, and what accelerate's FSDP
    # config (fsdp_transformer_layer_cls_to_wrap) exports for peft's wrap policy
    # (the runner picks MASTER_ADDR and a free MASTER_PORT)
    os.environ.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1",
                      FSDP_TRANSFORMER_CLS_TO_WRAP="LlamaDecoderLayer")
    import peft
    from peft import PromptTuningConfig, TaskType, get_peft_model
    from peft.utils.other import fsdp_auto_wrap_policy
    from torch.distributed.fsdp import CPUOffload
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    from transformers import LlamaConfig, LlamaForCausalLM

    imported(peft, "peft")
    dist.init_process_group(backend="nccl")
    torch.cuda.set_device(0)
    torch.manual_seed(0)
    # a tiny Llama built from a config (no download): two decoder layers, hidden size 16
    config = LlamaConfig(vocab_size=100, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                         num_attention_heads=2, max_position_embeddings=64)
    model = get_peft_model(LlamaForCausalLM(config),
                           PromptTuningConfig(task_type=TaskType.CAUSAL_LM, num_virtual_tokens=4))
    # peft's own FSDP recipe (examples/*_accelerate_fsdp.py): its wrap policy puts the prompt
    # embedding and each decoder layer in units of their own; parameters offloaded to the CPU
    model = FSDP(model, auto_wrap_policy=fsdp_auto_wrap_policy(model),
                 cpu_offload=CPUOffload(offload_params=True), device_id=torch.cuda.current_device())
    # what peft's forward reads as `self.device`: transformers' ModuleUtilsMixin.device, the
    # first parameter the wrapped model still registers (a nested unit's flat parameter)
    report(event="wrapped", self_device=str(model.module.device),
           compute_device=str(model.compute_device))
    model.eval()
    losses = []
    with torch.no_grad():
        for _ in range(2):
            # Trainer._prepare_inputs: the batch goes to the process's GPU
            input_ids = torch.randint(1, 100, (2, 6)).to("cuda")
            attention_mask = torch.ones(2, 6, dtype=torch.long).to("cuda")
            out = model(input_ids=input_ids, attention_mask=attention_mask, labels=input_ids)
            losses.append(out.loss.item())
    report(event="done", losses=losses, logits_device=str(out.logits.device))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
