"""Writes `tokenizer.pth` next to this file the way Bark's HuBERT tokenizer was trained and saved:
`auto_train` builds `HubertTokenizer(version=1).to("cuda")`, trains it on the GPU and calls
`model_training.save(save_path)`, so `torch.save` tags every storage `cuda:0`; `save` then appends
the `.info` entry that `load_from_checkpoint` reads.

Run it on a GPU machine with `python make_checkpoint.py`, or on a CPU-only machine with
`samedevice run snippets/coqui-bark-hubert-tokenizer-load-no-map-location/make_checkpoint.py`
(the simulated accelerator tags its storages `cuda:0` too). broken.py and fixed.py read the file.
"""

import json
import os.path
from pathlib import Path
from zipfile import ZipFile

import torch
from torch import nn


class HubertTokenizer(nn.Module):
    """TTS/tts/layers/bark/hubert/tokenizer.py, version 1, shrunk (768 -> 16 features, 1024 -> 16 hidden, 4096 -> 32, 10000 -> 50 tokens)."""

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

    def save(self, path):
        info_path = ".".join(os.path.basename(path).split(".")[:-1]) + "/.info"
        torch.save(self.state_dict(), path)
        data = {"input_size": self.input_size, "hidden_size": self.hidden_size,
                "output_size": self.output_size, "version": self.version}  # Data(...).save()
        with ZipFile(path, "a") as model_zip:
            model_zip.writestr(info_path, json.dumps(data))
            model_zip.close()


    def forward(self, x):
        x, _ = self.lstm(x)
        x = self.intermediate(x)
        x = self.fc(x)
        return self.softmax(x)


torch.manual_seed(0)
model_training = HubertTokenizer(version=1).to("cuda")  # auto_train: trained on the GPU
optimizer = torch.optim.Adam(model_training.parameters(), 0.01)  # prepare_training()
data_x = torch.randn(64, 16).to("cuda")  # *_semantic_features.npy
data_y = torch.randint(0, 50, (64,)).to("cuda")  # *_semantic.npy
for _ in range(100):  # train_step(x, y)
    optimizer.zero_grad()
    loss = nn.functional.nll_loss(model_training(data_x), data_y)
    loss.backward()
    optimizer.step()
model_training.save(str(Path(__file__).with_name("tokenizer.pth")))
