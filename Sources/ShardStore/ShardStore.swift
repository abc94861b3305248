// ShardStore — placeholder until its module lands.
