"""The audit pipeline, one module per stage, in the order an audit passes through them:

1. start        validate, check the plan, reserve credits, create the running audit, send discovery
2. discovery    follow the start URL's redirects, robots.txt, sitemaps, seed the frontier
3. rounds       plan a round within the page budget and send it as a chord of chunks
4. chunk        claim URLs under a lease, fetch them politely (politeness, scope, render), then
   page_record    turn each answer into a page, its issues, its links and the URLs it leads to, and
   persist        upsert them in batches that move the heartbeat
5. lighthouse   the optional Lighthouse sample (never fails the audit)
6. finalize     site checks, health score, completion, frontier dropped
   lifecycle    what every stage uses to move the audit: events, phases, the one conditional finish
                (complete, fail, cancel), delete, and the failure codes of a step
   reconcile    the watchdog's and the status read's judgement of a running audit: alive, revive, fail
   inline       the whole pipeline in one process (the CLI on the embedded default)

Helpers: chromium (finding and flagging the one Chromium the product starts), politeness, scope, render.
The Celery tasks that run these stages are in audits/tasks.py; stages reach Celery only through
audits/dispatch.py (by task name, after commit).
"""
