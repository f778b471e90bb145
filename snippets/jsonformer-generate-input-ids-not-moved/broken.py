"""Jsonformer 0.7.0, reduced: the prompt is tokenized on the CPU and handed to the model's
`generate` / `forward` as it is, while the user has put the model on the GPU.
`transformers` is replaced by a tiny causal LM with a greedy `generate` loop in plain PyTorch.

Upstream: https://github.com/1rgs/jsonformer/issues/9 (fixed by commit 3c06fe0, jsonformer 0.8.0).
"""

import json
from dataclasses import dataclass

import torch
from torch import nn

# --- a stand-in for transformers: tokenizer, causal LM, greedy generate -------------------


class CharTokenizer:
    """Printable ASCII, one token per character, plus the words "true" and "false"."""

    def __init__(self):
        self.vocab = [chr(i) for i in range(32, 127)] + ["true", "false", "</s>"]
        self.ids = {tok: i for i, tok in enumerate(self.vocab)}
        self.eos_token_id = self.ids["</s>"]

    def encode(self, text, return_tensors=None):
        ids = [self.ids[c] for c in text if c in self.ids]
        return torch.tensor([ids]) if return_tensors == "pt" else ids

    def decode(self, ids, skip_special_tokens=False):
        return "".join(self.vocab[i] for i in ids.tolist() if not (skip_special_tokens and i == self.eos_token_id))

    def convert_tokens_to_ids(self, token):
        return self.ids[token]

    def get_vocab(self):
        return dict(self.ids)


@dataclass
class CausalLMOutput:
    logits: torch.Tensor


class TinyCausalLM(nn.Module):
    def __init__(self, vocab_size, dim=32):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab_size, dim)
        self.mlp = nn.Sequential(nn.Linear(dim, dim), nn.GELU())
        self.lm_head = nn.Linear(dim, vocab_size)

    @property
    def device(self):  # PreTrainedModel.device: where the first parameter is
        return next(self.parameters()).device

    def forward(self, input_ids):
        hidden = self.embed_tokens(input_ids).cumsum(dim=1)  # every position sees its prefix
        return CausalLMOutput(logits=self.lm_head(self.mlp(hidden)))

    @torch.no_grad()
    def generate(self, input_ids, max_new_tokens, logits_processor=(), stopping_criteria=(),
                 pad_token_id=None, **kwargs):
        for _ in range(max_new_tokens):
            scores = self.forward(input_ids).logits[:, -1, :]
            for processor in logits_processor:
                scores = processor(input_ids, scores)
            next_tokens = scores.argmax(dim=-1)
            input_ids = torch.cat([input_ids, next_tokens[:, None]], dim=-1)
            if any(criteria(input_ids, scores) for criteria in stopping_criteria):
                break
        return input_ids


# --- jsonformer/logits_processors.py ---------------------------------------------------


class NumberStoppingCriteria:
    def __init__(self, tokenizer, precision=2):
        self.tokenizer = tokenizer
        self.precision = precision

    def __call__(self, input_ids, scores):
        decoded = self.tokenizer.decode(input_ids[0], skip_special_tokens=True)
        if decoded.count(".") > 1:
            return True
        if decoded.count(".") == 1 and len(decoded.strip().split(".")[1]) > self.precision:
            return True
        return False


class OutputNumbersTokens:
    def __init__(self, tokenizer, prompt):
        self.whitelist_tokens = [
            token_id for token_str, token_id in tokenizer.get_vocab().items()
            if all(c.isdigit() or c == "." for c in token_str)
        ]

    def __call__(self, input_ids, scores):
        scores[:, [i for i in range(len(scores[0])) if i not in self.whitelist_tokens]] = -float("inf")
        return scores


# --- jsonformer/main.py --------------------------------------------------------------


class Jsonformer:
    def __init__(self, model, tokenizer, json_schema, prompt, max_number_tokens=6):
        self.model = model
        self.tokenizer = tokenizer
        self.json_schema = json_schema
        self.prompt = prompt
        self.number_logit_processor = OutputNumbersTokens(self.tokenizer, self.prompt)
        self.number_stop_criteria = NumberStoppingCriteria(self.tokenizer, 3)
        self.generation_marker = "|GENERATION|"
        self.max_number_tokens = max_number_tokens

    def generate_number(self):
        prompt = self.get_prompt()
        response = self.model.generate(
            self.tokenizer.encode(prompt, return_tensors="pt"),
            max_new_tokens=self.max_number_tokens,
            num_return_sequences=1,
            logits_processor=[self.number_logit_processor],
            stopping_criteria=[self.number_stop_criteria],
            pad_token_id=self.tokenizer.eos_token_id,
        )
        response = self.tokenizer.decode(response[0], skip_special_tokens=True)
        response = response[len(prompt):].strip().rstrip(".")
        try:
            return float(response)
        except ValueError:
            return None

    def generate_boolean(self):
        prompt = self.get_prompt()
        input_tensor = self.tokenizer.encode(prompt, return_tensors="pt")
        output = self.model.forward(input_tensor)
        logits = output.logits[0, -1]
        true_logits = logits[self.tokenizer.convert_tokens_to_ids("true")]
        false_logits = logits[self.tokenizer.convert_tokens_to_ids("false")]
        return bool(true_logits > false_logits)

    def generate_object(self, properties, obj):
        for key, schema in properties.items():
            obj[key] = self.generation_marker
            obj[key] = self.generate_number() if schema["type"] == "number" else self.generate_boolean()
        return obj

    def get_prompt(self):
        template = """{prompt}\nOutput result in the following JSON schema format:\n{schema}\nResult: {progress}"""
        progress = json.dumps(self.value)
        progress = progress[:progress.find(f'"{self.generation_marker}"')]
        return template.format(prompt=self.prompt, schema=json.dumps(self.json_schema), progress=progress)

    def __call__(self):
        self.value = {}
        return self.generate_object(self.json_schema["properties"], self.value)


torch.manual_seed(0)
tokenizer = CharTokenizer()
model = TinyCausalLM(len(tokenizer.vocab))
model.cuda()  # the report: model.half().cuda()

json_schema = {"type": "object", "properties": {"age": {"type": "number"}, "is_student": {"type": "boolean"}}}
prompt = "Generate a person's information based on the following schema:"
jsonformer = Jsonformer(model, tokenizer, json_schema, prompt)
generated_data = jsonformer()
print(generated_data)
