"""self-rewarding-lm-pytorch 0.2.5's `DPODatasetGenerator`, reduced: the generator is given the
accelerator and moves the model and every prompt to its device before sampling.

Upstream: https://github.com/lucidrains/self-rewarding-lm-pytorch/commit/ec8b9112d4ced084ae7cacfe776e1ec01fa1f950
"""

import torch
import torch.nn.functional as F
from torch import nn

# self_rewarding_lm_pytorch/sampling_utils.py

def log(t, eps=1e-20):
    return torch.log(t.clamp(min=eps))


def gumbel_noise(t):
    noise = torch.zeros_like(t).uniform_(0, 1)
    return -log(-log(noise))


def gumbel_sample(t, temperature=1., dim=-1, keepdim=True, eps=1e-10):
    return ((t / max(temperature, eps)) + gumbel_noise(t)).argmax(dim=dim, keepdim=keepdim)


def top_p(logits, thres=0.9):
    sorted_logits, sorted_indices = torch.sort(logits, descending=True)
    cum_probs = torch.cumsum(F.softmax(sorted_logits, dim=-1), dim=-1)
    sorted_indices_to_remove = cum_probs > thres
    sorted_indices_to_remove = F.pad(sorted_indices_to_remove, (1, -1), value=False)
    sorted_logits[sorted_indices_to_remove] = float('-inf')
    return sorted_logits.scatter(1, sorted_indices, sorted_logits)


@torch.no_grad()
def sample(net, prompts, seq_len, temperature=1., filter_fn=top_p, filter_kwargs=None, pad_id=-1):
    filter_kwargs = filter_kwargs or {}
    device = next(net.parameters()).device
    net.eval()

    batch, prompts_tensor_len = prompts.shape
    batch_arange = torch.arange(batch, device=device)[..., None]

    prompt_lens = (prompts != pad_id).sum(dim=-1)
    curr_seq_indices = prompt_lens[..., None]

    out = prompts.clone()

    while (curr_seq_indices < seq_len).any():
        out = F.pad(out, (0, 1), value=pad_id)
        net_input = out.masked_fill(out == pad_id, 0)
        logits = net(net_input)

        logits = logits[batch_arange, curr_seq_indices]
        logits = logits.squeeze(1)

        logits = filter_fn(logits, **filter_kwargs)
        sampled_tokens = gumbel_sample(logits, temperature=temperature, dim=-1)

        out[batch_arange, curr_seq_indices] = sampled_tokens

        curr_seq_indices += 1
        curr_seq_indices.clamp_(max=seq_len)

    out = out[:, :seq_len]
    return out[:, prompts_tensor_len:]


class TransformerWrapper(nn.Module):
    """A stand-in for the README's x-transformers decoder: token embedding, one layer, logits."""

    def __init__(self, num_tokens=256, dim=32):
        super().__init__()
        self.token_emb = nn.Embedding(num_tokens, dim)
        self.layer = nn.Sequential(nn.Linear(dim, dim), nn.GELU())
        self.to_logits = nn.Linear(dim, num_tokens)

    def forward(self, x):
        return self.to_logits(self.layer(self.token_emb(x)))


class Accelerator:
    """A stand-in for accelerate's `Accelerator`: its device, and `prepare` moving a model there."""

    def __init__(self, device):
        self.device = torch.device(device)

    def prepare(self, model):
        return model.to(self.device)


def encode_str(seq_str):
    return torch.tensor(list(map(ord, seq_str)))


class DPODatasetGenerator(nn.Module):
    """self_rewarding_lm_pytorch.py in 0.2.5: the candidate-sampling part of `forward`."""

    def __init__(self, model, prompt_dataset, accelerator, tokenizer_encode, num_candidate_responses=4,
                 preference_max_seq_len=16, gen_temperature=0.7):
        super().__init__()
        self.model = model
        self.accelerator = accelerator
        self.prompt_dataset = prompt_dataset
        self.tokenizer_encode = tokenizer_encode
        self.num_candidate_responses = num_candidate_responses
        self.preference_max_seq_len = preference_max_seq_len
        self.gen_temperature = gen_temperature

    @property
    def device(self):
        return self.accelerator.device

    @torch.no_grad()
    def forward(self):
        self.model.eval()
        prompts = self.prompt_dataset
        prompt_tensors = [*map(self.tokenizer_encode, prompts)]  # on the CPU

        responses = []
        model = self.model.to(self.device)

        for prompt_tensor in prompt_tensors:
            repeated_prompt_tensor = prompt_tensor.repeat(self.num_candidate_responses, 1)
            repeated_prompt_tensor = repeated_prompt_tensor.to(self.device)

            candidate_tensor_responses = sample(
                model,
                prompts=repeated_prompt_tensor,
                seq_len=self.preference_max_seq_len,
                temperature=self.gen_temperature,
            )
            responses.append(candidate_tensor_responses)
        return responses


torch.manual_seed(0)
accelerator = Accelerator("cuda")  # SelfRewardingTrainer's accelerator: mps in the report

transformer = TransformerWrapper()
transformer = accelerator.prepare(transformer)  # SFTTrainer: self.accelerator.prepare(self.model, ...)

generator = DPODatasetGenerator(
    transformer, prompt_dataset=["mock prompt"], accelerator=accelerator, tokenizer_encode=encode_str
)
responses = generator()
print(responses[0])
