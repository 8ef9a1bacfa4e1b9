"""Amazon Mechanical Turk: the crowd adapter and a local fake of its API."""
