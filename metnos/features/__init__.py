"""The features ring: mail, reminders, schedules, the tutor, the mnestoma, ..."""
