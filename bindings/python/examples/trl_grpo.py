"""GRPO with tools on YC-Bench with TRL (``pip install 'ycgym[trl]'``; needs a tool-calling chat model).

    python bindings/python/examples/trl_grpo.py --model Qwen/Qwen3-0.6B --seeds 1-8 --max-steps 20

Each rollout is one company: TRL's GRPOTrainer creates one environment per rollout from the class that
``tool_env_class`` builds, the model acts through one typed tool per CLI command (``--tools run_command`` for the
paper's single tool), and the reward is final funds / starting funds. A group (``--num-generations``) plays the
same seed, so their advantages compare strategies on the same world. Not run by the test suite (it needs a model).
"""

from __future__ import annotations

import argparse

from trl import GRPOConfig, GRPOTrainer

from ycgym.integrations.trl import make_dataset, tool_env_class


def seeds(text: str) -> list[int]:
    lo, _, hi = text.partition("-")
    return list(range(int(lo), int(hi or lo) + 1))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True, help="a local path or hub id of a chat model with tool calling")
    p.add_argument("--seeds", type=seeds, default=seeds("1-8"), help="training seeds, e.g. 1-8")
    p.add_argument("--tools", choices=["verbs", "run_command"], default="verbs")
    p.add_argument("--max-steps", type=int, default=20)
    p.add_argument("--num-generations", type=int, default=4)
    p.add_argument("--max-completion-length", type=int, default=4096, help="tokens per rollout, tool results included")
    p.add_argument("--max-tool-calls", type=int, default=64, help="tool-calling iterations per rollout")
    p.add_argument("--output-dir", default="runs/trl-grpo")
    a = p.parse_args()

    args = GRPOConfig(
        output_dir=a.output_dir,
        max_steps=a.max_steps,
        num_generations=a.num_generations,
        per_device_train_batch_size=a.num_generations,
        max_completion_length=a.max_completion_length,
        max_tool_calling_iterations=a.max_tool_calls,
        logging_steps=1,
        report_to="none",
    )
    trainer = GRPOTrainer(
        model=a.model,
        args=args,
        train_dataset=make_dataset(a.seeds),
        environment_factory=tool_env_class(a.tools),
    )
    trainer.train()
    trainer.save_model(a.output_dir)


if __name__ == "__main__":
    main()
