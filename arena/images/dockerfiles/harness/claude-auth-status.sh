#!/bin/sh
# Claude Code's CLI where verifiers' claude_code harness finds it (`CLAUDE_CODE_EXECUTABLE`), with one
# question answered without starting it. claude-agent-acp runs `claude auth status --json` at
# `initialize` and again at every prompt, only to push its `_auth/status_update` notice (the runner
# ignores it): two starts of the 234 MB binary per rollout, 0.6 CPU-s each in the harness image, or a
# 5 s timeout under load. With an API key in the env and none of the settings that outrank it or send
# Claude Code to another provider, the answer is fixed; it is the one the binary prints (the fields
# claude-agent-acp 0.79.0 reads). Anything else, and every other command, runs the binary itself.
if [ "$#" = 3 ] && [ "$1" = auth ] && [ "$2" = status ] && [ "$3" = --json ] && [ -n "$ANTHROPIC_API_KEY" ] \
  && [ -z "$ANTHROPIC_AUTH_TOKEN$CLAUDE_CODE_OAUTH_TOKEN$CLAUDE_CODE_USE_BEDROCK$CLAUDE_CODE_USE_VERTEX$CLAUDE_CODE_USE_FOUNDRY" ]; then
  printf '%s\n' '{' '  "loggedIn": true,' '  "authMethod": "api_key",' '  "apiProvider": "firstParty",' \
    '  "apiKeySource": "ANTHROPIC_API_KEY"' '}'
  exit 0
fi
exec @CLAUDE_EXE@ "$@"
