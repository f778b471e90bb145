"""PyTorch "Learn the Basics" quickstart after tutorials PR #2249, reduced: the re-created model
is moved to `device` before loading the weights, and the test sample is moved to `device`
before the forward pass, so the prediction cell works whichever cells ran before it.

Upstream: https://github.com/pytorch/tutorials/pull/2249 (fixes issue #1983).
"""

import io

import torch
from torch import nn

device = "cuda"  # "cuda" if torch.cuda.is_available() else "cpu"


# Define model
class NeuralNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.linear_relu_stack = nn.Sequential(
            nn.Linear(28 * 28, 512),
            nn.ReLU(),
            nn.Linear(512, 512),
            nn.ReLU(),
            nn.Linear(512, 10),
        )

    def forward(self, x):
        x = self.flatten(x)
        logits = self.linear_relu_stack(x)
        return logits


torch.manual_seed(0)
# datasets.FashionMNIST(root="data", train=False, download=True, transform=ToTensor()), one sample
test_data = [(torch.rand(1, 28, 28), 9)]
classes = [
    "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
    "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot",
]

model = NeuralNetwork().to(device)  # trained on the GPU in the cells above
checkpoint = io.BytesIO()  # stands in for "model.pth"
torch.save(model.state_dict(), checkpoint)

# Loading Models
checkpoint.seek(0)
model = NeuralNetwork().to(device)
model.load_state_dict(torch.load(checkpoint, weights_only=True))

model.eval()
x, y = test_data[0][0], test_data[0][1]
with torch.no_grad():
    x = x.to(device)
    pred = model(x)
    predicted, actual = classes[pred[0].argmax(0)], classes[y]
    print(f'Predicted: "{predicted}", Actual: "{actual}"')
