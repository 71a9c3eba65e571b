"""Named contexts moved to their own app (contexts/): this forgets them here; their table
stays, and is the new app's (contexts/migrations/0001_initial.py)."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('allocations', '0010_readiness_phases'),
        ('contexts', '0001_initial'),
    ]

    operations = [migrations.SeparateDatabaseAndState(state_operations=[
        migrations.DeleteModel(
            name='ContextResource',
        ),
    ])]
