"""A tiny GPT-2 and its word-level tokenizer, built in memory (no hub, no downloads).

Shared by the transformers and peft drivers.
"""

from __future__ import annotations

import torch

WORDS = ["<pad>", "<eos>", "the", "cat", "dog", "sat", "on", "mat", "ran", "to", "a", "park",
         "and", "slept", "big", "small"]
TEXT = ["the cat sat on the mat", "a big dog ran to the park", "the small cat slept"]


def tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="<pad>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>")


def model():
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(vocab_size=len(WORDS), n_positions=32, n_embd=32, n_layer=2, n_head=2,
                        bos_token_id=1, eos_token_id=1, pad_token_id=0)
    return GPT2LMHeadModel(config)


def batch(tok):
    return tok(TEXT, return_tensors="pt", padding=True)
