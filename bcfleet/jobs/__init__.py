"""Jobs: plain functions of (fleet, now) that APScheduler and `fleet jobs tick` call."""
