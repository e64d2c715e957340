"""The synthetic look-alike of the official dataset (`trajbench traces synth`): deterministic
coding and workflow trajectories with realistic lengths, delays and ground truth."""

from __future__ import annotations

from .generate import OFFICIAL_CLIENT_TURNS, SynthPlan, SynthResult, iter_synthetic, plan, synthesize

__all__ = ["OFFICIAL_CLIENT_TURNS", "SynthPlan", "SynthResult", "iter_synthetic", "plan", "synthesize"]
