"""DragGAN (Zeqiang-Lai/DragGAN, now OpenGVLab/DragGAN: `draggan/api.py`, `draggan/web.py`),
reduced, as fixed by PR #78 ("Fix AssertionError(Torch not compiled with CUDA enabled) on
CPU-only device"): `neighbor` puts its candidate points on the latent's device,
`.to(latent.device)`, so a drag runs wherever `--device` put the generator.

Upstream: https://github.com/OpenGVLab/DragGAN/pull/78 (merged as commit 7e19ecf, 2023-06-05).
"""

import copy

import torch
import torch.nn.functional as FF
from torch import nn


class CustomGenerator(nn.Module):
    """A stand-in for draggan/api.py's StyleGAN2 `CustomGenerator`: `prepare` maps z to the
    per-layer latent, `generate` returns the image and the feature map F that drag_gan tracks."""

    def __init__(self, style_dim=16, n_latent=8, channels=8, size=32):
        super().__init__()
        self.style_dim, self.n_latent, self.size = style_dim, n_latent, size
        self.mapping = nn.Sequential(nn.Linear(style_dim, style_dim), nn.LeakyReLU(0.2))
        self.input = nn.Parameter(torch.randn(1, channels, size // 4, size // 4))
        self.modulation = nn.Linear(style_dim, channels)
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)
        self.to_rgb = nn.Conv2d(channels, 3, 1)

    def prepare(self, styles):
        latent = self.mapping(styles[0]).unsqueeze(1).repeat(1, self.n_latent, 1)
        noise = [None]
        return latent, noise

    def generate(self, latent, noise):
        out = self.input * self.modulation(latent.mean(1))[:, :, None, None]
        F = FF.leaky_relu(self.conv1(out), 0.2)
        image = self.to_rgb(F)
        F = FF.interpolate(F, (self.size, self.size), mode='bilinear')
        image = FF.interpolate(image, (self.size, self.size), mode='bilinear')
        return image, F


def bilinear_interpolate_torch(im, y, x):
    """
    im : B,C,H,W
    y : 1,numPoints -- pixel location y float
    x : 1,numPOints -- pixel location y float
    """
    device = im.device

    x0 = torch.floor(x).long().to(device)
    x1 = x0 + 1

    y0 = torch.floor(y).long().to(device)
    y1 = y0 + 1

    wa = ((x1.float() - x) * (y1.float() - y)).to(device)
    wb = ((x1.float() - x) * (y - y0.float())).to(device)
    wc = ((x - x0.float()) * (y1.float() - y)).to(device)
    wd = ((x - x0.float()) * (y - y0.float())).to(device)
    # Instead of clamp
    x1 = x1 - torch.floor(x1 / im.shape[3]).int().to(device)
    y1 = y1 - torch.floor(y1 / im.shape[2]).int().to(device)
    Ia = im[:, :, y0, x0]
    Ib = im[:, :, y1, x0]
    Ic = im[:, :, y0, x1]
    Id = im[:, :, y1, x1]

    return Ia * wa + Ib * wb + Ic * wc + Id * wd


def drag_gan(g_ema, latent: torch.Tensor, noise, F, handle_points, target_points, mask, max_iters=1000):
    handle_points0 = copy.deepcopy(handle_points)
    n = len(handle_points)
    r1, r2, lam = 3, 12, 20  # and d = 1, unused

    def neighbor(x, y, d):
        points = []
        for i in range(x - d, x + d):
            for j in range(y - d, y + d):
                points.append(torch.tensor([i, j]).float().to(latent.device))
        return points

    F0 = F.detach().clone()

    latent_trainable = latent[:, :6, :].detach().clone().requires_grad_(True)
    latent_untrainable = latent[:, 6:, :].detach().clone().requires_grad_(False)
    optimizer = torch.optim.Adam([latent_trainable], lr=2e-3)
    for iter in range(max_iters):
        for s in range(1):
            optimizer.zero_grad()
            latent = torch.cat([latent_trainable, latent_untrainable], dim=1)
            sample2, F2 = g_ema.generate(latent, noise)

            # motion supervision
            loss = 0
            for i in range(n):
                pi, ti = handle_points[i], target_points[i]
                di = (ti - pi) / torch.sum((ti - pi)**2)

                for qi in neighbor(int(pi[0]), int(pi[1]), r1):
                    f1 = bilinear_interpolate_torch(F2, qi[0], qi[1]).detach()
                    f2 = bilinear_interpolate_torch(F2, qi[0] + di[0], qi[1] + di[1])
                    loss += FF.l1_loss(f2, f1)

            if mask is not None:
                loss += ((F2 - F0) * (1 - mask)).abs().mean() * lam

            loss.backward()
            optimizer.step()

        # point tracking
        with torch.no_grad():
            sample2, F2 = g_ema.generate(latent, noise)
            for i in range(n):
                pi = handle_points0[i]
                f0 = bilinear_interpolate_torch(F0, pi[0], pi[1])
                minv = 1e9
                minx = 1e9
                miny = 1e9
                for qi in neighbor(int(handle_points[i][0]), int(handle_points[i][1]), r2):
                    f2 = bilinear_interpolate_torch(F2, qi[0], qi[1])
                    v = torch.norm(f2 - f0, p=1)
                    if v < minv:
                        minv = v
                        minx = int(qi[0])
                        miny = int(qi[1])
                handle_points[i][0] = minx
                handle_points[i][1] = miny

        F = F2.detach().clone()
        print(iter, f"{loss.item():.4f}", [p.tolist() for p in handle_points], [t.tolist() for t in target_points])
        yield sample2, latent, F2, handle_points


# draggan/web.py, run as `python -m draggan.web --device cpu`
device = 'cpu'  # args.device
torch.manual_seed(0)
g_ema = CustomGenerator().to(device)  # ModelWrapper: stylegan2(**kwargs).to(device)
g_ema.requires_grad_(False)
sample_z = torch.randn([1, 16], device=device)
latent, noise = g_ema.prepare([sample_z])
sample, F = g_ema.generate(latent, noise)

state = {'latent': latent, 'noise': noise, 'F': F, 'sample': sample, 'history': []}
points = {'handle': [[12, 14]], 'target': [[18, 20]]}  # the clicks on the image


def on_drag(points, max_iters, state, mask=None):
    """draggan/web.py: the "Drag it" button."""
    latent = state['latent']
    noise = state['noise']
    F = state['F']
    handle_points = [torch.tensor(p).float() for p in points['handle']]
    target_points = [torch.tensor(p).float() for p in points['target']]
    for sample2, latent, F, handle_points in drag_gan(g_ema, latent, noise, F,  # noqa: B020 (as in web.py)
                                                      handle_points, target_points, mask,
                                                      max_iters=max_iters):
        state['F'] = F
        state['latent'] = latent
        state['sample'] = sample2
    return state, handle_points


state, handle_points = on_drag(points, max_iters=3, state=state)
