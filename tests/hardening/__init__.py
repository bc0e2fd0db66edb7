"""The hardening campaign: crashes, corruption and hostile input against both stores, the
server and the LLM clients, each case's outcome classified (``registry``).

``python -m tests.hardening`` runs every case and prints the counts; ``test_campaign`` runs
each case as one pytest test (the long ones marked slow).
"""
