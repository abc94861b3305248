// SQLite — placeholder until its module lands.
