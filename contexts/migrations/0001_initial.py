"""The named context model, moved here from allocations: the table exists already
(allocations/migrations/0001_initial.py, its name widened in 0008_lifecycle.py), so only the
state is created, and its content type follows it."""

from django.db import migrations, models


def move_content_types(apps, schema_editor):
    content_type = apps.get_model("contenttypes", "ContentType")
    content_type.objects.filter(app_label="allocations", model="contextresource").update(
        app_label="contexts"
    )


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('allocations', '0010_readiness_phases'),
        ('contenttypes', '0002_remove_content_type_name'),
    ]

    operations = [migrations.SeparateDatabaseAndState(state_operations=[
        migrations.CreateModel(
            name='ContextResource',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(max_length=63)),
                ('namespace', models.CharField(max_length=63)),
                ('type', models.CharField(choices=[('workspace', 'Workspace'), ('memory', 'Memory'), ('knowledge', 'Knowledge'), ('artifacts', 'Artifacts')], max_length=16)),
                ('size', models.CharField(max_length=64)),
                ('access_mode', models.CharField(max_length=16)),
                ('storage_class', models.CharField(blank=True, max_length=253)),
                ('status', models.CharField(choices=[('provisioning', 'Provisioning'), ('ready', 'Ready'), ('failed', 'Failed'), ('deleting', 'Deleting'), ('deleted', 'Deleted')], default='provisioning', max_length=16)),
                ('message', models.TextField(blank=True)),
                ('requester', models.CharField(max_length=200)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('updated_at', models.DateTimeField(auto_now=True)),
                ('deleted_at', models.DateTimeField(blank=True, null=True)),
            ],
            options={
                'db_table': 'allocations_contextresource',
                'ordering': ['namespace', 'name'],
                'constraints': [models.UniqueConstraint(condition=models.Q(('status', 'deleted'), _negated=True), fields=('namespace', 'name'), name='context_active_name')],
            },
        ),
    ]), migrations.RunPython(move_content_types, migrations.RunPython.noop)]
