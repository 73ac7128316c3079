"""A lab where every student trains: the teacher's assignment, the students' names, the fair queue between them
(pure: assignment.py, names.py, fair_queue.py, board.py) and the room that hands the queue's runs to the run queue
(room.py, over bench.runs.jobs.JobManager). docs/LAB.md."""
