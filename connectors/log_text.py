"""Text the connectors did not write, made fit for one log line.

Model names (from a config file, the environment or a local server's listing), base URLs,
the provider names built from them, and what a server or an interpreter said are logged
through `loggable`: a newline in one would start a log line of its own (a forged record),
a terminal escape would rewrite what a person reads on the console.

`loggable` lives in `gui_agent.log_text`, which the core logs through too (the core may not
import the connectors); this name stays for the connectors and for code that imported it here.
"""

from __future__ import annotations

from gui_agent.log_text import loggable

__all__ = ["loggable"]
