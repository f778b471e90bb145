"""VectorDB-Plugin, fixed as in PR #112: `gui.py` sets the multiprocessing start method to
'spawn' before anything starts a process, so the `ProcessPoolExecutor` worker that captions the
images is a fresh interpreter that initialises CUDA for itself. (`force=True`: in a notebook or
any process that already started a pool the start method is set, and the call would refuse.)

Upstream: https://github.com/BBC-Esq/VectorDB-Plugin/issues/111 (the traceback, Ubuntu 22.04),
fixed by https://github.com/BBC-Esq/VectorDB-Plugin/pull/112 (the 'spawn' start method).
"""

import multiprocessing
from concurrent.futures import ProcessPoolExecutor

import torch
from torch import nn


# metrics_bar.py: runs when gui.py imports it
def is_nvidia_gpu_available():
    return torch.cuda.is_available() and "nvidia" in torch.cuda.get_device_name(0).lower()


nvidia_gpu = is_nvidia_gpu_available()  # (pynvml.nvmlInit() when True)


# loader_images.py
def get_best_device():
    if torch.cuda.is_available():
        return 'cuda'
    else:
        return 'cpu'


class BlipForConditionalGeneration(nn.Module):
    """A stand-in for the Salesforce BLIP captioner: image features -> caption token ids."""

    def __init__(self, vocab_size=32, max_new_tokens=5):
        super().__init__()
        self.vision = nn.Sequential(nn.Flatten(), nn.Linear(3 * 8 * 8, 16), nn.Tanh())
        self.text = nn.Linear(16, vocab_size)
        self.max_new_tokens = max_new_tokens

    @torch.no_grad()
    def generate(self, pixel_values):
        h = self.vision(pixel_values)
        tokens = []
        for _ in range(self.max_new_tokens):
            tokens.append(self.text(h).argmax(-1))
            h = torch.tanh(h + 0.5)
        return torch.stack(tokens, dim=1)


class loader_salesforce:
    def salesforce_process_images(self):
        device = get_best_device()
        torch.manual_seed(0)
        model = BlipForConditionalGeneration().to(device)
        images = torch.rand(3, 3, 8, 8)  # "Images_for_DB"
        documents = []
        for raw_image in images:
            inputs = raw_image.unsqueeze(0).to(device)
            output = model.generate(inputs)
            documents.append(output[0].cpu())
        return documents


# document_processor.py
def choose_image_loader(config):
    chosen_model = config["vision"]["chosen_model"]
    if chosen_model == 'salesforce':
        image_loader = loader_salesforce()
        return image_loader.salesforce_process_images()
    else:
        return []


def load_documents(config):
    docs = []
    # ProcessPoolExecutor to process images
    with ProcessPoolExecutor(1) as executor:
        future = executor.submit(choose_image_loader, config)
        processed_docs = future.result()
        additional_docs = processed_docs if processed_docs is not None else []
    docs.extend(additional_docs)
    return docs


def main():
    # Set the multiprocessing start method to 'spawn'
    multiprocessing.set_start_method('spawn', force=True)


if __name__ == '__main__':
    main()
    config = {"vision": {"chosen_model": "salesforce"}}
    documents = load_documents(config)  # "Create Vector Database" (CreateDatabaseThread)
    captions = torch.stack(documents)
    print(captions)
