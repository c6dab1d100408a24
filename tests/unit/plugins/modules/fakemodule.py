"""A stand-in for AnsibleModule: the params from the argument spec and the test's, check mode, run_command answered
from a table of real outputs, and exit_json/fail_json as a raised Done carrying the result."""

import pytest


class Done(Exception):
    def __init__(self, result):
        super().__init__(result.get("msg", ""))
        self.result = result


def run_main(monkeypatch, mod, params, answers=None, check_mode=False):
    """mod.main() with these params; answers: {argv[0]: (rc, stdout, stderr) or an OSError}. Returns (result, the
    commands run as (argv, data))."""
    calls = []

    class Module:
        def __init__(self, argument_spec, supports_check_mode):
            assert supports_check_mode
            self.params = {k: params.get(k, spec.get("default")) for k, spec in argument_spec.items()}
            self.check_mode = check_mode

        def run_command(self, argv, data=None, handle_exceptions=True):
            calls.append((list(argv), data))
            answer = (answers or {})[argv[0]]
            if isinstance(answer, OSError):
                assert not handle_exceptions
                raise answer
            return answer

        def exit_json(self, **result):
            raise Done(dict(result, failed=False))

        def fail_json(self, **result):
            raise Done(dict(result, failed=True))

    monkeypatch.setattr(mod, "AnsibleModule", Module)
    with pytest.raises(Done) as done:
        mod.main()
    return done.value.result, calls
