"""The terminal chat with session memory: ``python examples/chat.py --session user_123``.

The same as ``agent-sessions chat``; see ``agent_sessions/chat.py``.
"""

import sys

from agent_sessions.chat import main

if __name__ == "__main__":
    sys.exit(main())
