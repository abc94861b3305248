// SpotlightQuery — placeholder until its module lands.
