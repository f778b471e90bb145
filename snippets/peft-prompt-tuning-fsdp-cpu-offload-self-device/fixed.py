"""peft 0.4.0, reduced: the same prompt tuning under FSDP with parameter offload. PR #352 stops
using `self.device`: the prefix attention mask and labels follow the tensors they are
concatenated with, and the prompt tokens follow the prompt encoder's weight.

Upstream: https://github.com/huggingface/peft/pull/352 (merged 2023-05-10, released in 0.4.0).
"""

from types import SimpleNamespace

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class FullyShardedDataParallel(nn.Module):
    """torch.distributed.fsdp, one rank, `use_orig_params=False`, `CPUOffload(offload_params=True)`,
    reduced. FlatParamHandle flattens the unit's parameters into one `_flat_param`, registered on
    the wrapper and kept on the CPU between forwards; the original `weight`/`bias` stop being
    parameters and become plain tensor attributes, views into the unsharded copy on the GPU that
    the pre-forward unshard refreshes. Nested units keep their own flat parameter."""

    def __init__(self, module, compute_device="cuda"):
        super().__init__()
        self._fsdp_wrapped_module = module
        self.compute_device = torch.device(compute_device)
        self._orig = []
        for m in module.modules():
            if isinstance(m, FullyShardedDataParallel) and m is not module:
                continue
            for name, p in list(m._parameters.items()):
                if p is not None:
                    self._orig.append((m, name, p.shape, p.numel()))
        flat = torch.cat([m._parameters[name].detach().reshape(-1) for m, name, _, _ in self._orig])
        for m, name, _, _ in self._orig:
            del m._parameters[name]
        self._flat_param = nn.Parameter(flat.to("cpu"))  # offload_params: the shard lives on the CPU
        self._unshard()

    def _unshard(self):
        unsharded = self._flat_param.to(self.compute_device)  # all-gather onto the compute device
        offset = 0
        for m, name, shape, numel in self._orig:
            setattr(m, name, unsharded[offset : offset + numel].view(shape))  # _use_unsharded_views
            offset += numel

    def forward(self, *args, **kwargs):
        if self._is_root:  # _root_pre_forward: the inputs go to the compute device
            args = tuple(a.to(self.compute_device) for a in args)
            kwargs = {k: v.to(self.compute_device) if torch.is_tensor(v) else v for k, v in kwargs.items()}
        self._unshard()  # _pre_forward
        return self._fsdp_wrapped_module(*args, **kwargs)


def wrap(model):
    """FSDP with transformer_auto_wrap_policy over the decoder layers, then the root."""
    layers = model.base_model.layers
    for i in range(len(layers)):
        layers[i] = FullyShardedDataParallel(layers[i])
        layers[i]._is_root = False
    root = FullyShardedDataParallel(model)
    root._is_root = True
    return root


class LlamaForCausalLM(nn.Module):
    """transformers, shrunk: embeddings, decoder layers, head, and the shifted cross-entropy."""

    def __init__(self, vocab_size=100, hidden_size=16):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab_size, hidden_size)
        self.layers = nn.ModuleList(nn.Linear(hidden_size, hidden_size) for _ in range(2))
        self.lm_head = nn.Linear(hidden_size, vocab_size, bias=False)

    @property
    def device(self):
        """transformers' ModuleUtilsMixin.device: the device of the first parameter."""
        return next(self.parameters()).device

    def get_input_embeddings(self):
        return self.embed_tokens

    def forward(self, inputs_embeds, attention_mask, labels):
        hidden_states = inputs_embeds * attention_mask[..., None].to(inputs_embeds.dtype)
        for decoder_layer in self.layers:
            hidden_states = torch.tanh(decoder_layer(hidden_states))
        logits = self.lm_head(hidden_states)
        shift_logits = logits[..., :-1, :].reshape(-1, logits.shape[-1])
        shift_labels = labels[..., 1:].reshape(-1)
        return F.cross_entropy(shift_logits, shift_labels, ignore_index=-100)


class PromptEmbedding(nn.Module):
    """peft/tuners/prompt_tuning.py"""

    def __init__(self, config):
        super().__init__()
        self.embedding = nn.Embedding(config.num_virtual_tokens, config.token_dim)

    def forward(self, indices):
        return self.embedding(indices)


class PeftModelForCausalLM(nn.Module):
    """peft/peft_model.py, 0.4.0, the prompt-tuning branch."""

    def __init__(self, model, peft_config):
        super().__init__()
        self.base_model = model
        self.peft_config = peft_config
        self.word_embeddings = model.get_input_embeddings()
        self.prompt_encoder = nn.ModuleDict({"default": PromptEmbedding(peft_config)})
        self.prompt_tokens = {"default": torch.arange(peft_config.num_virtual_tokens).long()}

    def __getattr__(self, name):
        """Forward missing attributes to the wrapped module: `self.device` is the base model's."""
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self.base_model, name)

    def get_prompt(self, batch_size):
        prompt_encoder = self.prompt_encoder["default"]
        prompt_tokens = (
            self.prompt_tokens["default"].unsqueeze(0).expand(batch_size, -1).to(prompt_encoder.embedding.weight.device)
        )
        return prompt_encoder(prompt_tokens)

    def forward(self, input_ids=None, attention_mask=None, labels=None):
        peft_config = self.peft_config
        batch_size = input_ids.shape[0]
        if attention_mask is not None:
            # concat prompt attention mask
            prefix_attention_mask = torch.ones(batch_size, peft_config.num_virtual_tokens).to(attention_mask.device)
            attention_mask = torch.cat((prefix_attention_mask, attention_mask), dim=1)

        inputs_embeds = self.word_embeddings(input_ids)
        # concat prompt labels
        if labels is not None:
            prefix_labels = torch.full((batch_size, peft_config.num_virtual_tokens), -100).to(labels.device)
            labels = torch.cat((prefix_labels, labels), dim=1)
        prompts = self.get_prompt(batch_size=batch_size)
        prompts = prompts.to(inputs_embeds.dtype)
        inputs_embeds = torch.cat((prompts, inputs_embeds), dim=1)
        return self.base_model(inputs_embeds=inputs_embeds, attention_mask=attention_mask, labels=labels)


peft_config = SimpleNamespace(peft_type="PROMPT_TUNING", num_virtual_tokens=4, token_dim=16)
peft_model = PeftModelForCausalLM(LlamaForCausalLM(), peft_config)
# accelerate's FSDP plugin: fsdp_offload_params true, TRANSFORMER_BASED_WRAP
model = wrap(peft_model)

# Trainer._prepare_inputs: the batch goes to the process's GPU
input_ids = torch.randint(1, 100, (2, 6)).to("cuda")
attention_mask = torch.ones(2, 6).to("cuda")
labels = input_ids.clone()
loss = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels)
loss.backward()  # the gradients reach the flat parameters on the CPU
print(round(loss.item(), 4))
