// Workers — placeholder until its module lands.
