"""A small denoising sampler in the style of diffusion pipelines."""

import torch
import torch.nn as nn


class Denoiser(nn.Module):
    def __init__(self, channels: int = 4) -> None:
        super().__init__()
        self.net = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, sample, timestep):
        return self.net(sample) * (timestep / 1000.0)


class Scheduler:
    def __init__(self, steps: int = 50) -> None:
        self.timesteps = torch.linspace(999, 0, steps).long()

    def step(self, noise_pred, t, sample):
        step_index = (self.timesteps == t).nonzero().item()
        prev_t = self.timesteps[step_index + 1] if step_index + 1 < len(self.timesteps) else 0
        alpha = 1.0 - t.float() / 1000.0
        return sample - (1 - alpha) * noise_pred, prev_t


@torch.no_grad()
def sample(unet, scheduler, shape, device="cuda"):
    latents = torch.randn(shape).to(device)
    for t in scheduler.timesteps:
        noise_pred = unet(latents, t.to(device))
        latents, _ = scheduler.step(noise_pred, t, latents)
        if latents.abs().max() > 10:
            latents = latents.clamp(-10, 10)
    return latents.cpu().numpy()


if __name__ == "__main__":
    unet = Denoiser().half().cuda()
    images = sample(unet, Scheduler(), (1, 4, 32, 32))
    print(images.shape)
