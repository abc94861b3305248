// Coordinator — placeholder until its module lands.
