"""`mcp_servers:` in a suite (or a --target file): the shape MCP clients already use (command/args/env for a
stdio server, url/headers for streamable HTTP), plus what an evaluation needs on top (mode, include, exclude,
prefix, timeout)."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, model_validator

from evals_cli.models.base import StrictModel
from evals_cli.models.injection import InjectSpec

WORKSPACE = "{workspace}"
SERVER_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


class McpInjectSpec(InjectSpec):
    """An attack put into the results of a server's tools: all of them, or those `tools` names."""

    tools: list[str] | None = Field(default=None, min_length=1, description="Only these of the server's tools (by "
                                    "the server's names); every tool the server offers when absent.")


class McpServerSpec(StrictModel):
    """One MCP server. Exactly one of `command` (a stdio server evals-cli starts) and `url` (a streamable-HTTP
    server that is already running)."""

    command: str | None = Field(default=None, description="The program that runs a stdio server (python, npx, "
                                "uvx, ...); started by evals-cli, stopped when the run ends.")
    args: list[str] = Field(default_factory=list, description="Its arguments; `{workspace}` is the episode's folder.")
    env: dict[str, str] = Field(default_factory=dict, description="Environment variables for the server, over PATH, "
                                "HOME and the like; `{workspace}` is the episode's folder.")
    url: str | None = Field(default=None, description="A streamable-HTTP server's endpoint "
                            "(http://127.0.0.1:8000/mcp); `{workspace}` is the episode's folder.")
    headers: dict[str, str] = Field(default_factory=dict, description="HTTP headers for a url server "
                                    "(Authorization: \"Bearer ${TOKEN}\"); masked in every output.")
    mode: Literal["live", "mock"] = Field(default="live", description="live: the agent's calls go to the server; "
                                          "mock: the server only gives the schemas, and `tools:` entries of the "
                                          "same names give the results.")
    include: list[str] | None = Field(default=None, description="Offer only these of the server's tools (by the "
                                      "server's names); a name the server does not list is an error.")
    exclude: list[str] = Field(default_factory=list, description="Offer all of the server's tools but these.")
    prefix: str = Field(default="", description="Put before every tool name the agent sees (`time_` makes "
                        "get_current_time time_get_current_time); calls go to the server under its own name.")
    inject: list[McpInjectSpec] = Field(
        default_factory=list, description="Attacks put into the results of the server's tools (indirect prompt "
        "injection), each {text, position, on_call, when, tools}; for a tool, the first entry that names it (or "
        "names no tools) applies. A `tools:` entry's own inject (mode: mock) or a row's `inject:` wins.")
    timeout: float = Field(default=30.0, gt=0, description="Seconds for starting the server, listing its tools "
                           "and each call; past it the server is taken as hung (the run stops, exit 3).")

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerSpec:
        if (self.command is None) == (self.url is None):
            raise ValueError("give either command (a stdio server evals-cli starts) or url (a streamable-HTTP "
                             "server), not both" if self.command else "give command (a stdio server) or url "
                             "(a streamable-HTTP server)")
        if self.url is not None and not re.match(r"https?://", self.url.replace("{workspace}", ""), re.IGNORECASE):
            raise ValueError(f"url '{self.url}': a streamable-HTTP server's address starts with http:// or https://")
        if self.url is not None and (self.args or self.env):
            raise ValueError("args and env are for a stdio server (command); a url server is already running")
        if self.command is not None and self.headers:
            raise ValueError("headers are for a url server; a stdio server takes env")
        if self.include is not None and self.exclude:
            raise ValueError("give include or exclude, not both")
        if self.prefix and not re.fullmatch(r"[A-Za-z0-9_-]*", self.prefix):
            raise ValueError(f"prefix '{self.prefix}': use only letters, digits, _ and - (tool names allow no more)")
        return self

    @property
    def per_episode(self) -> bool:
        """Whether the server needs a fresh process (or connection) per (sample, repeat): it is given the
        episode's workspace folder. Others are started once per run and shared."""
        texts = [*self.args, *self.env.values(), self.url or "", self.command or ""]
        return any(WORKSPACE in text for text in texts)

    def exposed(self, name: str) -> str:
        """The name the agent sees for the server's tool `name`."""
        return f"{self.prefix}{name}"

    def inject_for(self, name: str) -> InjectSpec | None:
        """The attack the server's tool `name` carries (its name on the server), if any."""
        for entry in self.inject:
            if entry.tools is None or name in entry.tools:
                return InjectSpec.model_validate(entry.model_dump(exclude={"tools"}))
        return None

    def offers(self, name: str) -> bool:
        if self.include is not None:
            return name in self.include
        return name not in self.exclude


def server_name_problem(name: str) -> str | None:
    if SERVER_NAME.fullmatch(name):
        return None
    return f"server name '{name[:60]}': use 1-64 letters, digits, _ and -"
