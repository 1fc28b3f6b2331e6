# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The builtin prompt set of vllm_benchmark (dataset=builtin), written for this collection.

Speculative decoding is judged on realistic text: random token soup gives draft models and
EAGLE heads unrealistically low acceptance. These prompts cover the four kinds of traffic a
Jetson assistant serves: chat, code, summarisation and question answering. Each ends with a
cue for the answer ("Assistant:", "Answer:", ...) because the module uses the plain
completions API (no chat template). Changing any text changes every prompt_set_id: add a
new set rather than editing this one.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

CHAT = (
    "User: I am setting up a small greenhouse on my balcony for tomatoes and basil. The balcony faces west and gets "
    "about five hours of direct sun in the afternoon. What should I watch out for in the first month, and how often "
    "should I water?\nAssistant:",
    "User: My team keeps missing sprint goals because tasks turn out bigger than we thought. We estimate in story "
    "points during planning, but the estimates are mostly guesses. Can you suggest a few practical changes we could "
    "try for the next two sprints?\nAssistant:",
    "User: I have a job interview on Thursday for a junior data analyst position. I know SQL and some Python but I "
    "have never worked in an office before. How should I prepare, and what questions should I ask them at the end?"
    "\nAssistant:",
    "User: Write a short, friendly message to my neighbours explaining that we will have builders in the flat from "
    "Monday to Wednesday next week, that there may be some drilling noise between nine and four, and that they can "
    "knock on our door if anything is a problem.\nAssistant:",
    "User: I want to start running but I get bored quickly and my knees ache after about two kilometres. I am 41 and "
    "work at a desk all day. Could you give me a gentle six-week plan that keeps it interesting?\nAssistant:",
    "User: Explain to a twelve-year-old why the sky is blue during the day but red and orange at sunset. Keep it "
    "simple, use an everyday comparison, and avoid equations.\nAssistant:",
    "User: We are a family of four planning a four-day trip by train through the mountains in late autumn. The kids "
    "are eight and eleven. What should we pack, and what kind of activities work well when the weather turns bad?"
    "\nAssistant:",
    "User: My sourdough bread comes out dense and flat even though the starter bubbles nicely. I feed it once a day, "
    "use 75 percent hydration and bake at 230 degrees in a cast iron pot. What could be going wrong?\nAssistant:",
    "User: I manage a warehouse with three shifts, and the hand-over between shifts is always messy: tasks are "
    "forgotten and the same questions get asked again and again. How could we structure a ten-minute hand-over "
    "meeting?\nAssistant:",
    "User: Help me write a polite but firm email to a supplier whose delivery of control boards is now three weeks "
    "late. We need a confirmed shipping date by Friday, otherwise we will have to cancel part of the order."
    "\nAssistant:",
    "User: What are some good habits for keeping notes when learning a new programming language? I tend to copy "
    "examples into a document and never look at them again.\nAssistant:",
)

CODE = (
    "Write a Python function `merge_intervals(intervals)` that takes a list of (start, end) tuples, merges all "
    "overlapping intervals and returns them sorted by start. Include a docstring and three doctest examples, one "
    "of them with touching intervals such as (1, 3) and (3, 5).\n\n```python\n",
    "The following Python code is supposed to count word frequencies in a text file, but it crashes on large files "
    "and treats 'The' and 'the' as different words. Fix both problems and explain the changes.\n\n```python\n"
    "def count_words(path):\n    counts = {}\n    text = open(path).read()\n    for word in text.split(' '):\n"
    "        counts[word] = counts[word] + 1\n    return counts\n```\n\nFixed version:\n```python\n",
    "Write a Bash script that checks every five seconds whether a TCP port on localhost accepts connections, gives up "
    "after a configurable timeout, and exits with status 0 when the port is open and 1 otherwise. Use only tools "
    "found on a minimal Debian system.\n\n```bash\n#!/usr/bin/env bash\n",
    "Explain what this C function does, point out the bug, and propose a corrected version.\n\n```c\n"
    "int sum_positive(const int *values, size_t n) {\n    int total = 0;\n    for (size_t i = 0; i <= n; i++) {\n"
    "        if (values[i] > 0)\n            total += values[i];\n    }\n    return total;\n}\n```\n\nExplanation:",
    "Write a SQL query for a table `orders(id, customer_id, created_at, total_cents, status)` that returns, for each "
    "customer, the number of completed orders and the total amount spent in the last 90 days, only for customers "
    "with at least three completed orders, sorted by amount spent in descending order.\n\n```sql\n",
    "Implement a small least-recently-used cache class in Python with `get(key)` and `put(key, value)` methods, a "
    "fixed capacity given to the constructor, and O(1) operations. Do not use functools.lru_cache.\n\n```python\n"
    "class LRUCache:\n",
    "Write a Rust function that parses a string such as \"12h30m15s\" or \"45m\" into a std::time::Duration and "
    "returns an error for malformed input. Add unit tests for valid and invalid strings.\n\n```rust\n",
    "Review the following JavaScript snippet. It should debounce a search box so that the API is called at most once "
    "every 300 milliseconds after the user stops typing, but it calls the API on every key press.\n\n```javascript\n"
    "function debounce(fn, delay) {\n  return function (...args) {\n    let timer;\n    clearTimeout(timer);\n"
    "    timer = setTimeout(() => fn.apply(this, args), delay);\n  };\n}\n```\n\nReview:",
    "Write a Dockerfile for a Python 3.11 web service that installs its dependencies from requirements.txt, runs as "
    "a non-root user, exposes port 8080 and keeps the final image small. Explain each step briefly in comments."
    "\n\n```dockerfile\n",
    "Write a Python generator `read_batches(path, size)` that reads a large CSV file and yields lists of at most "
    "`size` rows as dictionaries, without loading the whole file into memory. Handle a missing file with a clear "
    "error message.\n\n```python\nimport csv\n\n",
    "Convert this synchronous Python function into an asyncio version that fetches all URLs concurrently with at "
    "most five requests in flight, using only the standard library and aiohttp.\n\n```python\nimport requests\n\n"
    "def fetch_all(urls):\n    return [requests.get(u, timeout=10).text for u in urls]\n```\n\nAsync version:"
    "\n```python\n",
)

SUMMARISE = (
    "Summarise the following report in three sentences for a busy manager.\n\nThe maintenance team inspected the "
    "twelve conveyor belts of the packing hall during the planned shutdown in March. Nine belts were in good "
    "condition and only needed routine cleaning and tension adjustment. Belts four and seven showed early wear on the "
    "drive rollers; replacement parts have been ordered and should arrive within two weeks, and the belts can run "
    "at reduced speed until then. Belt eleven had a cracked motor mount, which was welded on site as a temporary "
    "repair. The team recommends replacing the mount during the next weekend stop, because the weld is not expected "
    "to last more than two months under full load. Total downtime was fourteen hours, two hours less than planned."
    "\n\nSummary:",
    "Summarise this customer feedback in a short bulleted list of the main points.\n\nI have used the app every day "
    "for about a year to track my cycling. The route planning is excellent and the maps load quickly even with a "
    "weak signal. However, since the last update the battery drain is much worse: a three-hour ride now uses more "
    "than half of my phone battery, while before it was about a quarter. The new social feed is also distracting and "
    "I could not find a way to turn it off. On the positive side, the support team answered my question about "
    "exporting data within a day and the export worked perfectly. I would still recommend the app, but please fix "
    "the battery problem.\n\nMain points:",
    "Summarise the following meeting notes in one paragraph.\n\nThe project group met on Tuesday to review the pilot "
    "of the new ticket system. Support agents said the new categories make it easier to route requests, but the "
    "form is too long for simple questions. Average first response time fell from six hours to four. Two agents "
    "reported that customers sometimes receive duplicate confirmation emails. The group agreed to shorten the form "
    "for the 'general question' category, to ask the vendor about the duplicate emails, and to extend the pilot to "
    "the second support team in May. The next review is planned for the end of May, when a full month of data from "
    "both teams will be available.\n\nSummary:",
    "Write a two-sentence summary of this article.\n\nCities are increasingly planting small, dense urban forests on "
    "unused plots of land such as roadside strips and former car parks. The method packs several native species "
    "into a few hundred square metres, which makes the trees compete for light and grow quickly. Supporters say the "
    "forests cool the surrounding streets, absorb rain water and give children a place to learn about nature. "
    "Critics point out that the long-term survival rates are not yet well studied and that maintenance in the first "
    "three years costs more than a traditional park. Several cities now track the plots with yearly surveys to "
    "find out which species mixes work best in their climate.\n\nSummary:",
    "Summarise the following incident report, stating the cause, the impact and the fix.\n\nOn Saturday at 02:10 the "
    "nightly backup job filled the shared disk of the file server. Because the disk was full, the mail service could "
    "not write its queue and stopped accepting messages. Monitoring raised an alert at 02:15, but the on-call "
    "engineer's phone was on silent and the alert was acknowledged only at 07:40. The engineer deleted old backup "
    "archives, restarted the mail service and confirmed that queued messages from other servers were delivered by "
    "08:30. No messages were lost. The backup job has been changed to write to a dedicated disk, and alerts for full "
    "disks now call the backup on-call person after fifteen minutes.\n\nSummary:",
    "Summarise this product description in one sentence suitable for a catalogue.\n\nThe travel kettle holds half a "
    "litre, folds flat to four centimetres and weighs just under 600 grams. It works on both 110 and 230 volts, "
    "switches off automatically when the water boils or when it is empty, and has a removable limescale filter. The "
    "silicone body is food-safe and can be cleaned in the dishwasher, and the kit includes two collapsible cups and "
    "a storage bag.\n\nCatalogue sentence:",
    "Summarise the key findings of this study abstract for a general audience.\n\nWe followed 1,200 adults for two "
    "years to examine whether a short walk after meals changes blood sugar levels. Participants were asked to walk "
    "for ten to fifteen minutes after their two largest meals, while a control group kept their usual routine. The "
    "walking group showed lower blood sugar peaks after meals and a small but significant reduction in long-term "
    "blood sugar markers. The effect was strongest in participants who were older than sixty. Adherence fell from 80 "
    "percent in the first three months to 55 percent at the end of the study, mostly because of bad weather and "
    "busy schedules.\n\nPlain-language summary:",
    "Summarise this chapter of a history text in four sentences.\n\nIn the early nineteenth century the town was a "
    "small river port that shipped timber and grain downstream. The arrival of the railway in 1852 changed its "
    "economy within a generation: a rail yard, two foundries and a brick works opened near the station, and the "
    "population tripled. The old port lost most of its trade, and the warehouses along the river were turned into "
    "housing for factory workers. Conditions in these crowded buildings were poor, and an outbreak of cholera in "
    "1866 led the town council to build its first water works and sewer system. By the end of the century the "
    "town had become an industrial centre known for its iron castings.\n\nSummary:",
    "Summarise the following changelog for users who are deciding whether to upgrade.\n\nVersion 4.2 adds support "
    "for exporting reports as spreadsheets and lets administrators schedule exports every day or every week. Search "
    "is about three times faster on large projects thanks to a new index, which is built automatically during the "
    "first start after the upgrade and can take up to twenty minutes. The deprecated XML interface has been removed; "
    "integrations must use the JSON interface, available since version 3.0. Several display problems on small "
    "screens were fixed, and a bug that sometimes duplicated comments when editing quickly has been resolved."
    "\n\nUpgrade summary:",
    "Summarise this email thread in two sentences.\n\nAnna: The training room is booked twice on the 14th, once for "
    "the safety course and once for the new-starter induction. Ben: The safety course cannot move because the "
    "external trainer is only available that day. Anna: Could the induction use the meeting room on the second "
    "floor? Carla: It only seats ten, and we have twelve new starters. Ben: Then let us split the induction into two "
    "groups, one in the morning and one in the afternoon. Carla: That works; I will update the invitations and tell "
    "the new starters today.\n\nSummary:",
    "Summarise this description of a field trial in three bullet points.\n\nThe cooperative tested two irrigation "
    "schedules on neighbouring potato fields over one season. Field A was watered on a fixed schedule every three "
    "days, while field B was watered only when soil moisture sensors dropped below a threshold. Field B used 28 "
    "percent less water and produced a harvest within two percent of field A. The sensors needed recalibration "
    "twice after heavy rain, and one sensor failed because a tractor damaged its cable. The cooperative plans to "
    "extend the sensor-based schedule to four more fields next year and to protect the cables with conduit.\n\n"
    "Key points:",
)

QA = (
    "Question: Why do airplanes usually fly at around ten to twelve kilometres altitude rather than lower or "
    "higher? Give the main physical and practical reasons.\nAnswer:",
    "Question: What is the difference between a process and a thread in an operating system, and when would you "
    "choose one over the other?\nAnswer:",
    "Question: How does a heat pump move heat from cold outdoor air into a warm house, and why is it more efficient "
    "than an electric heater?\nAnswer:",
    "Question: What causes the seasons on Earth? Many people think it is the distance from the Sun; explain why "
    "that is not the main reason.\nAnswer:",
    "Question: In statistics, what is the difference between correlation and causation? Give an everyday example "
    "where confusing them leads to a wrong conclusion.\nAnswer:",
    "Question: How do vaccines train the immune system, and why are some vaccines given in several doses?\nAnswer:",
    "Question: What is the purpose of an index in a relational database, and what are the costs of adding too many "
    "indexes to a table?\nAnswer:",
    "Question: Why does bread go stale, and why does toasting stale bread make it taste better again?\nAnswer:",
    "Question: What is compound interest? Show with a simple example how a savings account of 1000 euros at 3 "
    "percent grows over five years.\nAnswer:",
    "Question: How does GPS let a phone work out its position, and why does it need signals from at least four "
    "satellites?\nAnswer:",
    "Question: What is the difference between weather and climate, and why can a very cold winter happen in a "
    "warming climate?\nAnswer:",
)

#: (category, text) for every builtin prompt, in a fixed order.
PROMPTS = tuple([('chat', t) for t in CHAT] + [('code', t) for t in CODE]
                + [('summarisation', t) for t in SUMMARISE] + [('qa', t) for t in QA])


def texts():
    """All builtin prompt texts in their fixed order."""
    return [text for _category, text in PROMPTS]


def words():
    """A vocabulary of plain words drawn from the prompts (for approximate random prompts)."""
    seen = []
    known = set()
    for text in texts():
        for word in text.split():
            word = word.strip('.,:;!?()`"\'*').lower()
            if word.isalpha() and word not in known:
                known.add(word)
                seen.append(word)
    return seen
