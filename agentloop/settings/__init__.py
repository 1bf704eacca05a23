"""Settings: the options that shape a run, from the command line, the environment, the
project's files and the user's file, merged in that order of precedence (merge.py;
docs/reference/settings.md). keys.py names them, schema.py checks a value (without click when
agentloop.options.values can: click_types.py has click's types, the CLI's), sources.py reads the
files and the environment, show.py prints what applies for --show-settings.

Read before anything runs: a broken file or variable ends as one SettingsError line (exit 2).
Imports no run/, state/ or app: the CLI hands the result over as plain option values. Kept
empty, so the CLI's option types (click_types.py) load without the readers.
"""
