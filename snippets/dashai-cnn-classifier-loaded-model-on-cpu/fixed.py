"""DashAI's CNNImageClassifier, reduced: `load()` reads the checkpoint with
`torch.load(filename, map_location=torch.device("cpu"))` and rebuilds the network on the CPU,
and `predict()` moved only the images to `self.device`. Fixed as in PR #679: `predict()`
moves the model to `self.device` before the evaluation loop.

Upstream: https://github.com/DashAISoftware/dashAI/pull/679
"""

import io

import torch
from torch import nn, optim


class _CNNBlock(nn.Module):
    """DashAI/back/models/cnn_image_classifier.py: Conv2d -> ReLU -> MaxPool2d."""

    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size=3, padding=1)
        self.relu = nn.ReLU()
        self.pool = nn.MaxPool2d(kernel_size=2, stride=2)

    def forward(self, x):
        return self.pool(self.relu(self.conv(x)))


class _CNN(nn.Module):
    def __init__(self, input_channels, input_size, num_classes, num_conv_blocks, initial_filters):
        super().__init__()
        self.conv_blocks = nn.ModuleList()
        in_ch, out_ch = input_channels, initial_filters
        for _ in range(num_conv_blocks):
            self.conv_blocks.append(_CNNBlock(in_ch, out_ch))
            in_ch, out_ch = out_ch, out_ch * 2
        final_spatial = input_size // (2**num_conv_blocks)
        self.fc = nn.Linear(in_ch * final_spatial * final_spatial, num_classes)

    def forward(self, x):
        for block in self.conv_blocks:
            x = block(x)
        return self.fc(x.view(x.size(0), -1))


class CNNImageClassifier:
    def __init__(self, epochs=2, image_size=16, num_conv_blocks=2, initial_filters=4):
        self.epochs = epochs
        self.image_size = image_size
        self.num_conv_blocks = num_conv_blocks
        self.initial_filters = initial_filters
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.model = None
        self.optimizer = None

    def train(self, images, labels, num_classes):
        self.num_classes = num_classes
        self.model = _CNN(3, self.image_size, num_classes, self.num_conv_blocks,
                          self.initial_filters).to(self.device)
        self.optimizer = optim.Adam(self.model.parameters(), lr=0.01)
        self.model.train()
        for _ in range(self.epochs):
            images_d, labels_d = images.to(self.device), labels.to(self.device)
            self.optimizer.zero_grad()
            loss = nn.functional.cross_entropy(self.model(images_d), labels_d)
            loss.backward()
            self.optimizer.step()
        return self

    def predict(self, images):
        self.model.to(self.device)  # PR #679: move the (possibly CPU-loaded) model first
        self.model.eval()
        with torch.no_grad():
            logits = self.model(images.to(self.device))
            return torch.softmax(logits, dim=1).cpu()

    def save(self, filename):
        torch.save({"model_state_dict": self.model.state_dict(),
                    "optimizer_state_dict": self.optimizer.state_dict(),
                    "num_classes": self.num_classes}, filename)

    @classmethod
    def load(cls, filename):
        ckpt = torch.load(filename, map_location=torch.device("cpu"))
        instance = cls()
        instance.num_classes = ckpt["num_classes"]
        instance.model = _CNN(3, instance.image_size, instance.num_classes,
                              instance.num_conv_blocks, instance.initial_filters)  # on the CPU
        instance.model.load_state_dict(ckpt["model_state_dict"])
        instance.optimizer = optim.Adam(instance.model.parameters())
        instance.optimizer.load_state_dict(ckpt["optimizer_state_dict"])
        return instance


torch.manual_seed(0)
images = torch.rand(8, 3, 16, 16)
labels = torch.randint(0, 3, (8,))

trained = CNNImageClassifier().train(images, labels, num_classes=3)
buffer = io.BytesIO()  # the run's saved model file
trained.save(buffer)
buffer.seek(0)

model = CNNImageClassifier.load(buffer)  # a later prediction job loads the saved run
probs = model.predict(images)
print(probs.argmax(dim=1))
