#!/usr/bin/python3
"""torch_infer.py — a (tiny, fixed) PyTorch model on every frame, without copying it.

    python3 torch_infer.py cam0 [--count N] [--timeout S]

torch.from_dlpack(frame) is a tensor over the frame where it already is:
in the daemon's GPU memory for a GPU ring (executor.backend: cuda, shared
through CUDA IPC), in the host ring otherwise: the stream's typed tensor
when it has a tensor: block (README "Typed tensors"), else the frame's
bytes.  The model is one Conv1d layer over its values; put yours in its
place.  frame.valid() after
the model ran says whether the daemon reused the slot meanwhile.
"""
import argparse
import sys

import gpuingest

try:
    import torch
except ImportError:
    print("torch_infer: PyTorch is not installed; nothing to run (see numpy_stats.py)")
    sys.exit(0)


def main():
    ap = argparse.ArgumentParser(description="Run a small PyTorch model on each frame of a gpuingestd stream.")
    ap.add_argument("stream", help="a stream name (cam0) or the ring's shared-memory name (/gpuingest-cam0)")
    ap.add_argument("--count", type=int, default=0, help="stop after N frames (default: until the daemon stops)")
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for the ring, and for each frame")
    a = ap.parse_args()

    try:
        ring = gpuingest.open(a.stream, timeout=a.timeout)
    except gpuingest.Error as e:
        print(f"torch_infer: {e}", file=sys.stderr)
        return 1
    device = torch.device("cuda", ring.info.cuda_device) if ring.info.in_device else torch.device("cpu")
    torch.manual_seed(0)  # fixed weights: the same frame gives the same output on every run
    model = torch.nn.Conv1d(1, 4, kernel_size=64, stride=64, bias=False).to(device).eval()
    done = 0
    with ring, torch.inference_mode():
        try:
            for frame in ring.frames(timeout=a.timeout):
                # the frame's typed tensor (a stream with tensor:, e.g. complex64 IQ or uint16
                # pixels), else its bytes as uint8: either way no copy
                x = torch.from_dlpack(frame).flatten()
                if x.is_complex():
                    x = torch.view_as_real(x.to(torch.complex64)).flatten()  # I, Q as reals
                y = model(x[None, None, :x.numel() // 64 * 64].float())
                scores = y.mean(dim=2).flatten().tolist()     # .tolist() waits for the GPU
                if not frame.valid():
                    continue  # the daemon reused the slot while the model read it
                print(f"frame {frame.frame}: {frame.state}, {frame.received}/{frame.expected} packets on "
                      f"{x.device}: " + " ".join(f"{v:.2f}" for v in scores))
                done += 1
                if a.count and done >= a.count:
                    break
        except KeyboardInterrupt:
            pass
    print(f"{done} frames")
    return 0


if __name__ == "__main__":
    sys.exit(main())
