"""Running a campaign: the project folder and its settings, the store (the only place with SQL
on the project's state), the crowd port every crowd implements, the driver and its batch state
machine, budget, the modified QuickSort, aggregation and adaptive answers."""
