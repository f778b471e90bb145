"""Coqui TTS 0.15 (`TTS/tts/layers/bark/inference_funcs.py`, `TTS/tts/layers/bark/hubert/tokenizer.py`),
reduced: cloning a voice with Bark loads the HuBERT tokenizer with
`HubertTokenizer.load_from_checkpoint(path).to(model.device)`. The tokenizer was trained and saved on
a GPU, and `load_from_checkpoint` calls `torch.load(path)` with no `map_location`; its own
`map_location` argument only feeds a `.to()` after the load. On a machine where PyTorch sees no
CUDA device, the load fails before either `.to()` runs.

Upstream: https://github.com/coqui-ai/TTS/issues/2749 (the report) and
https://github.com/coqui-ai/TTS/pull/2750 (the fix). `tokenizer.pth` was written on a GPU by
make_checkpoint.py, next to this file.
"""

import json
from pathlib import Path
from zipfile import ZipFile

import torch
from torch import nn

HUBERT_TOKENIZER = Path(__file__).with_name("tokenizer.pth")  # model.config.LOCAL_MODEL_PATHS["hubert_tokenizer"]


class HubertTokenizer(nn.Module):
    """TTS/tts/layers/bark/hubert/tokenizer.py, version 1, shrunk (768 -> 16 features,
    1024 -> 16 hidden, 4096 -> 32, 10000 -> 50 tokens)."""

    def __init__(self, hidden_size=16, input_size=16, output_size=50, version=1):
        super().__init__()
        self.lstm = nn.LSTM(input_size, hidden_size, 2, batch_first=True)
        self.intermediate = nn.Linear(hidden_size, 32)
        self.fc = nn.Linear(32, output_size)
        self.softmax = nn.LogSoftmax(dim=1)
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.output_size = output_size
        self.version = version

    def forward(self, x):
        x, _ = self.lstm(x)
        x = self.intermediate(x)
        x = self.fc(x)
        x = self.softmax(x)
        return x

    @torch.no_grad()
    def get_token(self, x):
        return torch.argmax(self(x), dim=1)

    @staticmethod
    def load_from_checkpoint(path, map_location=None):
        with ZipFile(path) as model_zip:
            filesMatch = [file for file in model_zip.namelist() if file.endswith("/.info")]
            data_from_model = json.loads(model_zip.read(filesMatch[0]).decode("utf-8"))  # Data.load(...)
            model_zip.close()
        model = HubertTokenizer(
            data_from_model["hidden_size"],
            data_from_model["input_size"],
            data_from_model["output_size"],
            data_from_model["version"],
        )
        model.load_state_dict(torch.load(path))
        if map_location:
            model = model.to(map_location)
        return model


class Bark(nn.Module):
    """A stand-in for TTS/tts/models/bark.py: a module whose `device` is where its parameters are."""

    def __init__(self):
        super().__init__()
        self.hubert = nn.Linear(8, 16)  # CustomHubert: 16 semantic features per audio frame

    @property
    def device(self):
        return next(self.parameters()).device


def generate_voice(audio, model, output_path):
    """TTS/tts/layers/bark/inference_funcs.py, the semantic-token half."""
    hubert_model = model.hubert  # CustomHubert(checkpoint_path=...).to(model.device)

    # Load the CustomTokenizer model
    tokenizer = HubertTokenizer.load_from_checkpoint(HUBERT_TOKENIZER).to(model.device)
    with torch.no_grad():
        semantic_vectors = hubert_model(audio.to(model.device))
    semantic_tokens = tokenizer.get_token(semantic_vectors)
    return semantic_tokens.cpu().numpy()  # np.savez(output_path, ..., semantic_prompt=semantic_tokens)


torch.manual_seed(0)
bark = Bark()  # TTS("tts_models/multilingual/multi-dataset/bark"): gpu=False, the model stays on the CPU
audio = torch.randn(40, 8)  # speaker.wav, as frames
semantic_prompt = generate_voice(audio, bark, output_path="voices/qeii.npz")
print("semantic tokens:", semantic_prompt[:12])
