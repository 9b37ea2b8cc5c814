"""Run by test/integration/python-client.test.ts against the real API and worker (CAIRN_URL, CAIRN_API_KEY)."""

import asyncio
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from cairn_client import AsyncClient, CairnError, Client  # noqa: E402

URL = os.environ["CAIRN_URL"]
KEY = os.environ["CAIRN_API_KEY"]
NOTE = b"# Heron\n\nThe Quillmarsh heron lighthouse has 4711 steps.\n"


class ClientTest(unittest.TestCase):
    def test_ingest_memory_and_query(self):
        cairn = Client(URL, KEY)
        self.assertGreater(cairn.plan_file("heron.md", "text/markdown", NOTE)["records"]["total"], 0)
        job = cairn.ingest_file("heron.md", "text/markdown", NOTE)
        self.assertEqual(job["status"], "queued")
        self.assertEqual(job.wait(120)["status"], "succeeded")
        cairn.peer("maria")
        cairn.session("chat-1")
        write = cairn.add_messages("chat-1", "maria", [{"role": "user", "content": "I keep bees behind the Quillmarsh lighthouse."}])
        self.assertEqual(write["status"], "processing")
        self.assertEqual(write.wait(120)["status"], "succeeded")
        self.assertIn("4711", json.dumps(cairn.evidence("How many steps does the Quillmarsh lighthouse have?")))
        self.assertIn("bees", json.dumps(cairn.evidence("Who keeps bees behind the lighthouse?")))

    def test_typed_error_not_retried(self):
        with self.assertRaises(CairnError) as caught:
            Client(URL, "cairn_sk_not-a-real-key").evidence("anything")
        self.assertEqual((caught.exception.status, caught.exception.code, caught.exception.retryable), (401, "unauthorized", False))

    def test_async_client(self):
        async def flow():
            cairn = AsyncClient(URL, KEY)
            await cairn.peer("ada")
            await cairn.session("chat-2")
            write = await cairn.add_messages("chat-2", "ada", [{"role": "user", "content": "My violin is a 1921 Bergonzi copy."}])
            self.assertEqual((await write.wait(120))["status"], "succeeded")
            return await cairn.evidence("What violin does Ada have?")

        self.assertIn("Bergonzi", json.dumps(asyncio.run(flow())))


if __name__ == "__main__":
    unittest.main(verbosity=2)
