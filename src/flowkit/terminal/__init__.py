"""What every ``flowkit`` command line shares: the main command (``flowkit.cli``) and the
workflows' own commands and demos (``flowkit.sas.cli``, ``flowkit.quality.demo`` ...).

- ``errors``: ``CommandError``, how a command ends with a message and an exit code
- ``store``: the ``--store DIR|URL`` option and how commands open the store it names
- ``inputs``: what commands read from their arguments (TARGETs, JSON values, files, numbers)
- ``output``: how commands print (tables, times, JSON, hints that run as printed), made safe
  for a terminal
- ``progress``: the progress line long commands draw on stderr, only on a terminal
- ``typed``: the lines a person types in a terminal conversation
- ``demo_llm``: the LLM a command runs with, ``--llm replay:demo`` (the recorded answers a
  workflow's demo ships), and the parser of ``python -m flowkit.<workflow>.demo``

It sits below the workflows and imports none of them, nor ``flowkit.cli``: the workflows'
commands use it, and ``flowkit.cli`` registers those commands. Nothing here is imported by
``import flowkit``. ``demo_llm`` loads the LLM clients, so commands import it only when they run
and ``flowkit --help`` stays fast.
"""
