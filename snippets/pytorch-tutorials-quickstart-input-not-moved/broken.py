"""PyTorch "Learn the Basics" quickstart before tutorials PR #2249, reduced: the model was
trained on the GPU; the notebook cell that re-created it on the CPU and loaded model.pth was
skipped, and the prediction cell feeds it a test sample straight from the dataset, a CPU tensor.

Upstream: https://github.com/pytorch/tutorials/issues/1983 (fixed by PR #2249).
"""

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
# skipped: model = NeuralNetwork(); model.load_state_dict(torch.load("model.pth"))

model.eval()
x, y = test_data[0][0], test_data[0][1]
with torch.no_grad():
    pred = model(x)  # a CPU sample into the GPU model
    predicted, actual = classes[pred[0].argmax(0)], classes[y]
    print(f'Predicted: "{predicted}", Actual: "{actual}"')
